/**
 * The engine's own channel for live-only events — a model step's streamed `MessageDelta`s, which are never stored —
 * and the readers' view that merges them with the log. The log (`EventLog.subscribe`) gives a reader the stored
 * events, gap-free and in order; a model step publishes its deltas here; `follow` hands both to the reader as one
 * queue, each delta after the stored event of its step (a delta carries that `ModelStepStarted`'s `seq`).
 *
 * A delta whose step the reader has not reached yet (it is still reading what was stored before) waits until the
 * reader passes that step, then follows it at once; a delta of a step before the reader's cursor is not for it. Deltas
 * reach the readers of this process only: another process reads the step's stored `MessageCompleted`. Both are pushed:
 * the reader's taker is woken as soon as the code that handed them on is done (a microtask).
 */
import * as Handover from "@parley/core/Handover"
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

export interface Live {
  /** Hands live-only events of a tree to its readers in this process. Nothing is stored. */
  readonly publish: (treeId: SessionId, events: ReadonlyArray<TurnEvent>) => void
  /**
   * A queue of `stored` (a tree's log from `cursor`, as `EventLog.subscribe` gives it; of one session with
   * `sessionId`) with the tree's live-only events merged in, for as long as the scope lives. It ends (`Cause.Done`)
   * or fails as `stored` does (its error mapped by `onError`).
   */
  readonly follow: <E, E2>(
    treeId: SessionId,
    cursor: number,
    sessionId: SessionId | undefined,
    stored: Queue.Dequeue<TurnEvent, E | Cause.Done>,
    onError: (error: E) => E2
  ) => Effect.Effect<Queue.Dequeue<TurnEvent, E2 | Cause.Done>, never, Scope.Scope>
}

/**
 * The most deltas a reader keeps waiting for it to reach their step (one step's worth, for a reader that subscribed
 * while the step streams and still reads what came before); beyond it, deltas are dropped — the step's stored
 * `MessageCompleted` has the whole text.
 */
const maxWaiting = 10_000

export const make = (): Live => {
  const readers = new Map<SessionId, Set<(events: ReadonlyArray<TurnEvent>) => void>>()

  const publish = (treeId: SessionId, events: ReadonlyArray<TurnEvent>) => {
    const set = readers.get(treeId)
    if (set !== undefined) { for (const reader of set) reader(events) }
  }

  const follow = <E, E2>(
    treeId: SessionId,
    cursor: number,
    sessionId: SessionId | undefined,
    stored: Queue.Dequeue<TurnEvent, E | Cause.Done>,
    onError: (error: E) => E2
  ) =>
    Effect.gen(function*() {
      const events = yield* Queue.make<TurnEvent, E2 | Cause.Done>()
      /** The `seq` after the last stored event handed on: deltas of steps before it go through at once. */
      let next = cursor
      /** Deltas of steps the reader has not reached yet, in the order they came. */
      let waiting: Array<TurnEvent> = []
      /**
       * Whether a hand-over is due: the reader's taker gets what came once the code that published or moved it is done
       * (a microtask), not at the scheduler's next round, a turn of the event loop later (see `EventLog.subscribe`).
       */
      const handOver = Handover.make(events)

      const reader = (published: ReadonlyArray<TurnEvent>) => {
        for (const event of published) {
          if (event.seq < cursor || (sessionId !== undefined && event.sessionId !== sessionId)) continue
          if (event.seq < next) {
            Queue.offerUnsafe(events, event)
            handOver()
          } else if (waiting.length < maxWaiting) waiting.push(event)
        }
      }
      /** Hands on stored events, each followed by the waiting deltas of its step. */
      const handOn = (batch: ReadonlyArray<TurnEvent>) => {
        if (batch.length === 0) return
        if (waiting.length === 0) {
          Queue.offerAllUnsafe(events, batch)
          next = batch[batch.length - 1].seq + 1
        } else {
          for (const event of batch) {
            Queue.offerUnsafe(events, event)
            next = event.seq + 1
            if (waiting.length > 0 && waiting[0].seq < next) {
              const ready = waiting.filter((delta) => delta.seq < next)
              waiting = waiting.filter((delta) => delta.seq >= next)
              Queue.offerAllUnsafe(events, ready)
            }
          }
        }
        handOver()
      }

      let set = readers.get(treeId)
      if (set === undefined) {
        set = new Set()
        readers.set(treeId, set)
      }
      set.add(reader)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          const current = readers.get(treeId)
          current?.delete(reader)
          if (current?.size === 0) readers.delete(treeId)
        })
      )
      // `stored` ends with `Cause.Done` once its last events were taken: then so does the reader's queue.
      const move: Effect.Effect<never, E | Cause.Done> = Effect.flatMap(Queue.takeAll(stored), (batch) => {
        handOn(batch)
        return move
      })
      yield* move.pipe(
        Effect.catch((error) => Cause.isDone(error) ? Queue.end(events) : Queue.fail(events, onError(error))),
        Effect.forkScoped
      )
      return Queue.asDequeue(events)
    })

  return { publish, follow }
}
