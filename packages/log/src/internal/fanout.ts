/**
 * The in-process fan-out of `EventLog.make`, written once for every driver: the subscribers of a tree's events from a
 * cursor, in a `Queue` each (no `Stream` to run; it ends with `Cause.Done`), gap-free and in order.
 *
 * - `appended(treeId, events)`: the store's own append, as it committed it — handed to the tree's subscribers at once,
 *   with no read, and pushed: each subscriber's taker is woken as soon as the appender's code is done (a microtask),
 *   before the event loop turns (Effect's `Queue` wakes it at the scheduler's next round, a turn of the event loop
 *   later: under load, milliseconds).
 * - `moved(treeId, nextSeq)`: someone else (another process) appended up to `nextSeq` — the subscribers behind it read
 *   what they miss from the store.
 * - `subscribe(treeId, from, sessionId?)`: the stored events from `from` (read once), then every later one as it comes.
 *   A subscriber is registered before its first read, so nothing appended meanwhile is lost; what it is handed before
 *   that read returns waits until it has.
 *
 * The event log gives it its driver's `readRecent` (stored events from a cursor) and `exists` (whether it has the tree).
 */
import * as Handover from "@parley/core/Handover"
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { StoreError } from "../StoreError.js"

export interface Fanout {
  readonly subscribe: (
    treeId: SessionId,
    from: number,
    sessionId?: SessionId | undefined
  ) => Effect.Effect<Queue.Dequeue<TurnEvent, StoreError | Cause.Done>, never, Scope.Scope>
  readonly appended: (treeId: SessionId, events: ReadonlyArray<TurnEvent>) => void
  readonly moved: (treeId: SessionId, nextSeq: number) => void
}

interface Subscriber {
  /** Events handed to it (or a `moved` mark) while it reads: taken in order once the read is done. */
  readonly handed: (events: ReadonlyArray<TurnEvent>) => void
  readonly moved: (nextSeq: number) => void
}

/** A fan-out over a driver's reads. */
export const make = (store: {
  readonly read: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  readonly exists: (treeId: SessionId) => Effect.Effect<boolean, StoreError>
}): Fanout => {
  const subscribers = new Map<SessionId, Set<Subscriber>>()

  const each = (treeId: SessionId, f: (subscriber: Subscriber) => void) => {
    const set = subscribers.get(treeId)
    if (set !== undefined) { for (const subscriber of set) f(subscriber) }
  }

  const subscribe = (treeId: SessionId, from: number, sessionId?: SessionId | undefined) =>
    Effect.gen(function*() {
      const mailbox = yield* Queue.unbounded<TurnEvent, StoreError | Cause.Done>()
      const mine = (event: TurnEvent) => sessionId === undefined || event.sessionId === sessionId
      const cursor = Math.max(0, from)
      /** The next stored `seq` it expects. */
      let next = cursor
      /** Whether a read is running: what comes meanwhile waits in `waiting`. */
      let reading = true
      /** The furthest `seq` someone else is known to have appended to (exclusive). */
      let known = 0
      const waiting: Array<TurnEvent> = []
      const context = yield* Effect.context<never>()
      /**
       * Whether a hand-over is due: the subscriber's taker gets what came as soon as the code that appended is done (a
       * microtask), not at the scheduler's next round (after the event loop's next turn: its I/O, the next commits).
       * Never inside the append itself: the appender's state is not updated yet.
       */
      const handOver = Handover.make(mailbox)

      /** Takes events in order, from `next` on. */
      const take = (events: ReadonlyArray<TurnEvent>): boolean => {
        const taken: Array<TurnEvent> = []
        let gap = false
        for (const event of events) {
          if (event.seq === next) {
            next = event.seq + 1
            if (mine(event)) taken.push(event)
          } else if (event.seq > next) {
            gap = true
          }
        }
        if (taken.length > 0) {
          Queue.offerAllUnsafe(mailbox, taken)
          handOver()
        }
        return gap
      }

      /** Reads what it misses from the store, then what was handed to it meanwhile; again while it falls behind. */
      const catchUp: Effect.Effect<void> = Effect.suspend(() =>
        Effect.matchEffect(store.read(treeId, next), {
          onFailure: (error) => Queue.fail(mailbox, error),
          onSuccess: (events) =>
            Effect.suspend(() => {
              take(events)
              const handed = waiting.splice(0)
              const gap = take(handed)
              if (gap || known > next) return catchUp
              reading = false
              return Effect.void
            })
        })
      )
      /** A catch-up started by an append or a move (synchronous callers): run in a fiber, stopped with the scope. */
      let running: Fiber.Fiber<void> | undefined
      const startCatchUp = () => {
        reading = true
        running = Effect.runForkWith(context)(catchUp)
      }

      const subscriber: Subscriber = {
        handed: (events) => {
          if (reading) {
            waiting.push(...events)
            return
          }
          if (take(events)) startCatchUp()
        },
        moved: (nextSeq) => {
          known = Math.max(known, nextSeq)
          if (!reading && nextSeq > next) startCatchUp()
        }
      }
      let set = subscribers.get(treeId)
      if (set === undefined) {
        set = new Set()
        subscribers.set(treeId, set)
      }
      set.add(subscriber)
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          const current = subscribers.get(treeId)
          current?.delete(subscriber)
          if (current?.size === 0) subscribers.delete(treeId)
          return running === undefined ? Effect.void : Fiber.interrupt(running)
        })
      )
      // The first read: a tree the store does not have ends the subscription at once.
      const first = yield* Effect.result(store.read(treeId, cursor))
      if (first._tag === "Failure") {
        yield* Queue.fail(mailbox, first.failure)
        return mailbox as Queue.Dequeue<TurnEvent, StoreError | Cause.Done>
      }
      if (first.success.length === 0 && !(yield* Effect.orElseSucceed(store.exists(treeId), () => true))) {
        yield* Queue.end(mailbox)
        return mailbox as Queue.Dequeue<TurnEvent, StoreError | Cause.Done>
      }
      take(first.success)
      const handed = waiting.splice(0)
      if (take(handed) || known > next) {
        yield* Effect.forkScoped(catchUp)
      } else {
        reading = false
      }
      return mailbox as Queue.Dequeue<TurnEvent, StoreError | Cause.Done>
    })

  return {
    subscribe,
    appended: (treeId, events) => each(treeId, (subscriber) => subscriber.handed(events)),
    moved: (treeId, nextSeq) => each(treeId, (subscriber) => subscriber.moved(nextSeq))
  }
}
