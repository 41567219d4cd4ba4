import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import type { Service as SessionStore } from "../SessionStore.js"
import type { Draft, SessionRuntime } from "./state.js"

/**
 * Appends to a session's log. The caller holds the session's lock (see `locked`): the engine is the only writer of
 * the sessions it runs, so `seq` comes from memory and a conflict is a defect.
 */
export const appendUnlocked = (
  store: SessionStore,
  session: SessionRuntime,
  drafts: ReadonlyArray<Draft>
): Effect.Effect<ReadonlyArray<TurnEvent>> =>
  Effect.gen(function*() {
    if (drafts.length === 0) return []
    const at = yield* DateTime.now
    const events = drafts.map((draft, i) => draft({ seq: session.nextSeq + i, at }))
    yield* Effect.orDie(store.append(session.session.sessionId, events))
    session.nextSeq += events.length
    return events
  })

/** Runs `effect` holding the session's append lock. */
export const locked = <A, E, R>(session: SessionRuntime, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  session.lock.withPermits(1)(effect)

export const append = (
  store: SessionStore,
  session: SessionRuntime,
  drafts: ReadonlyArray<Draft>
): Effect.Effect<ReadonlyArray<TurnEvent>> => locked(session, appendUnlocked(store, session, drafts))

export const sessionIdOf = (session: SessionRuntime): SessionId => session.session.sessionId
