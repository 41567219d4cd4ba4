/**
 * The event log over a row-level driver, written once for every driver: the rows an append adds to the indexes
 * (derived from its events), the in-process fan-out (`Fanout`: subscribers, live-only events) and `changes`.
 *
 * After this process's append returns from the driver, its subscribers get the events at once (no read) and
 * `changes` the log's new length; the appender goes on after that, as it did with the store of one piece. An append
 * by someone else comes from the driver's `follow`: `changes` first, then the subscribers (they read what they miss),
 * so an engine hears of it before a reader of the tree's events can come asking the engine about what it read.
 */
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { AppendRows, Change, Driver, Durability, Service, Written } from "../EventLog.js"
import type { Lease } from "../Leases.js"
import * as Outbox from "../Outbox.js"
import { SeqConflict, StoreError } from "../StoreError.js"
import * as Fanout from "./fanout.js"

export const rowsOf = (
  treeId: SessionId,
  expectedSeq: number,
  events: ReadonlyArray<TurnEvent>,
  fence: Lease | undefined,
  durability: Durability
): AppendRows => {
  const sessions: Array<AppendRows["sessions"][number]> = []
  const opened: Array<AppendRows["opened"][number]> = []
  const resolved: Array<AppendRows["resolved"][number]> = []
  const reported: Array<AppendRows["reported"][number]> = []
  let openTurns = 0
  let lastSession: SessionId | undefined
  for (const event of events) {
    // Most appends name one session: a look back at the last one spares the search.
    if (event.sessionId !== lastSession) {
      lastSession = event.sessionId
      if (!sessions.some((session) => session.sessionId === event.sessionId)) {
        sessions.push({ sessionId: event.sessionId, seq: event.seq })
      }
    }
    const kind = Outbox.kindOf(event)
    if (kind !== undefined) reported.push({ seq: event.seq, kind })
    switch (event._tag) {
      case "TurnQueued": {
        openTurns++
        break
      }
      case "TurnEnded": {
        openTurns--
        break
      }
      case "CallbackOpened": {
        const { callback, seq, sessionId, turnId } = event
        opened.push({
          treeId,
          sessionId,
          turnId,
          callbackId: callback.id,
          kind: callback.kind,
          seq,
          expiresAt: callback.expiresAt?.epochMilliseconds
        })
        break
      }
      case "CallbackResolved": {
        resolved.push({ callbackId: event.callbackId, seq: event.seq, resolution: event.resolution })
        break
      }
    }
  }
  return {
    treeId,
    expectedSeq,
    events,
    sessions,
    opened,
    resolved,
    openTurns,
    reported,
    paused: events.length > 0 && events[events.length - 1]._tag === "TurnBlocked",
    fence,
    durability
  }
}

/** An append of no events: nothing written, in any store. */
const nothingWritten = Effect.succeed<Written>({ bytes: 0 })

export const make = (driver: Driver): Effect.Effect<Service, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    /** The queues of the readers of `changes`, each with the owner whose appends it is not told of. */
    const watchers = new Map<Queue.Queue<Change, StoreError | Cause.Done>, string | undefined>()
    /** Tells the watchers of an append, fenced by `owner`'s lease when it is given. */
    const tell = (change: Change, owner?: string) => {
      for (const [watcher, except] of watchers) {
        if (owner === undefined || except !== owner) Queue.offerUnsafe(watcher, change)
      }
    }
    const fanout = Fanout.make({
      read: driver.readRecent,
      exists: (treeId) => Effect.map(driver.nextSeq(treeId), Option.isSome)
    })

    // Appends by others (another process on the same database): `changes` first, then the subscribers.
    yield* driver.follow((treeId, nextSeq) =>
      Effect.sync(() => {
        tell({ treeId, nextSeq })
        fanout.moved(treeId, nextSeq)
      })
    )

    /** Events whose `seq`s do not follow `expectedSeq`: a conflict with the log's length (or no such tree). */
    const misnumbered = (treeId: SessionId, expectedSeq: number): Effect.Effect<never, SeqConflict | StoreError> =>
      Effect.flatMap(driver.nextSeq(treeId), (actual): Effect.Effect<never, SeqConflict | StoreError> =>
        Option.isNone(actual)
          ? Effect.fail(new StoreError({ method: "append", description: `there is no tree ${treeId}` }))
          : Effect.fail(new SeqConflict({ treeId, expected: expectedSeq, actual: actual.value })))

    const service: Service = {
      createTree: driver.createTree,
      getTree: driver.getTree,
      treeOf: driver.treeOf,
      append: (treeId, expectedSeq, events, fence, durability = "sync") => {
        if (events.length === 0) {
          return nothingWritten
        }
        for (let i = 0; i < events.length; i++) {
          if (events[i].seq !== expectedSeq + i) {
            return misnumbered(treeId, expectedSeq)
          }
        }
        // Once the driver committed, the subscribers and `changes` are told whatever becomes of the appender.
        return Effect.uninterruptible(
          Effect.flatMap(driver.append(rowsOf(treeId, expectedSeq, events, fence, durability)), (written) => {
            fanout.appended(treeId, events)
            tell({ treeId, nextSeq: expectedSeq + events.length }, fence?.owner)
            return Effect.succeed(written)
          })
        )
      },
      read: driver.read,
      subscribe: fanout.subscribe,
      changes: (options) =>
        Effect.acquireRelease(
          Effect.tap(Queue.unbounded<Change, StoreError | Cause.Done>(), (watcher) =>
            Effect.sync(() => {
              watchers.set(watcher, options?.exceptOwner)
            })),
          (watcher) =>
            Effect.sync(() =>
              watchers.delete(watcher)
            )
        ),
      listOpen: driver.listOpen
    }
    return service
  })
