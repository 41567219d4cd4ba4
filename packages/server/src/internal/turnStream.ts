/**
 * What the front-end protocols (the AI SDK's UI message stream, AG-UI) share: a session of the tenant that runs the
 * agent of the path, its latest turn, one turn's events from a cursor until the turn ends or waits on its callbacks,
 * the open callbacks of a session, and the number of such streams one key holds (the server's `maxStreamsPerKey`).
 */
import type { Callback } from "@parley/core/Callback"
import type { SessionId, TurnId } from "@parley/core/Ids"
import type { Tenant } from "@parley/core/ProtocolApi"
import { TooManyStreams } from "@parley/core/ProtocolApi"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { type Access, notFound } from "./access.js"
import type * as Served from "./served.js"

// =============================================================================
// Sessions and turns
// =============================================================================

/** The server's one `SessionNotFound`, for a chat id that is no session id at all. */
export const notFoundOf = (id: string) => Effect.fail(notFound(id))

/** The root session of `sessionId` when it is the tenant's and runs `agent`; the server's one `SessionNotFound` if not. */
export const ownedSession = (
  transport: Served.Served,
  access: Access,
  tenant: Tenant["Service"],
  sessionId: SessionId,
  agent: string
) =>
  Effect.gen(function*() {
    const root = yield* access.owned(tenant.id, sessionId)
    const info = yield* transport.getSession(root)
    if (info.agent !== agent) return yield* notFound(sessionId)
    return root
  })

/** The latest turn of a root session as its stored log has it: its id, where its events start, whether it ended. */
export interface LatestTurn {
  readonly turnId: TurnId
  readonly from: number
  readonly ended: boolean
  /** The end of the stored log when it was read (the `seq` the next event gets). */
  readonly end: number
}

export const latestTurn = (transport: Served.Served, root: SessionId) =>
  Effect.gen(function*() {
    const { cursor } = yield* transport.getSession(root)
    if (cursor === undefined || cursor === 0) return Option.none<LatestTurn>()
    const end = cursor
    const found = yield* transport.events(root, 0).pipe(
      Stream.takeUntil((event) => event.seq >= end - 1),
      Stream.filter((event) => event.seq < end && event.sessionId === root),
      Stream.runFold(
        () => undefined as { turnId: TurnId; from: number; ended: boolean } | undefined,
        (latest, event) => {
          if (event._tag === "TurnQueued") return { turnId: event.turnId, from: event.seq, ended: false }
          if (event._tag === "TurnEnded" && latest !== undefined && event.turnId === latest.turnId) {
            return { ...latest, ended: true }
          }
          return latest
        }
      )
    )
    return found === undefined ? Option.none<LatestTurn>() : Option.some({ ...found, end })
  })

/** A root turn as it stands: the callbacks open in its tree, and the `seq` its next event gets. */
export const turnNow = (transport: Served.Served, root: SessionId, turnId: TurnId) =>
  Effect.map(transport.snapshot(root, turnId), (snapshot) => ({
    callbacks: snapshot.callbacks as ReadonlyArray<Callback>,
    cursor: snapshot.cursor
  }))

// =============================================================================
// One turn's events
// =============================================================================

export interface Follow {
  readonly root: SessionId
  readonly turnId: TurnId
  readonly from: number
  /**
   * A `TurnBlocked` of the turn at or after this `seq` ends the stream (the turn waits on its callbacks); an earlier
   * one does not (a resumed stream replays it and waits on: an answer from anywhere moves it on).
   */
  readonly endOnBlockFrom: number
}

/** Whether `event` ends the stream of `follow`'s turn (after it is sent). */
export const endsStream = (follow: Follow, event: TurnEvent): boolean =>
  event.sessionId === follow.root && event.turnId === follow.turnId &&
  (event._tag === "TurnEnded" || (event._tag === "TurnBlocked" && event.seq >= follow.endOnBlockFrom))

/**
 * The events of the turn's tree from `from` until the turn ends or blocks (see `Follow`), or the server stops. The
 * events of other turns of the session that come meanwhile (a turn queued after it) are left out.
 */
export const follow = (
  transport: Served.Served,
  options: Follow,
  shutdown: Deferred.Deferred<void>
): Stream.Stream<TurnEvent, unknown> =>
  transport.events(options.root, options.from).pipe(
    Stream.takeUntil((event) => endsStream(options, event)),
    Stream.filter((event) => event.sessionId !== options.root || event.turnId === options.turnId),
    Stream.interruptWhen(Deferred.await(shutdown))
  )

// =============================================================================
// Streams per key
// =============================================================================

/** Counts the front-end streams each key holds; one over `max` is refused with `TooManyStreams` (429). */
export const makeStreamCounter = (max: number) => {
  const open = new Map<string, number>()
  return {
    /** Takes a stream slot of the key, or fails; the stream gives it back when it ends. */
    acquire: (keyId: string) =>
      Effect.suspend(() => {
        const count = open.get(keyId) ?? 0
        if (count >= max) return Effect.fail(new TooManyStreams({ limit: max }))
        open.set(keyId, count + 1)
        return Effect.succeed(Effect.sync(() => {
          const now = (open.get(keyId) ?? 1) - 1
          if (now <= 0) open.delete(keyId)
          else open.set(keyId, now)
        }))
      })
  }
}
