import type { SessionId, TurnId } from "@parley/core/Ids"
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

/** Event ids: the session and turn an event is filed under. */
export interface EventIds {
  readonly sessionId: SessionId
  readonly turnId: TurnId
}

/**
 * Appends an event that the whole tree must see (callbacks, subagents): to the session's own log and, for a
 * subagent, to the root's log under the running root turn. The caller holds the session's lock.
 */
export const appendToTreeUnlocked = (
  store: SessionStore,
  session: SessionRuntime,
  turnId: TurnId,
  draft: (ids: EventIds) => Draft
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* appendUnlocked(store, session, [draft({ sessionId: session.session.sessionId, turnId })])
    const tree = session.tree
    if (session !== tree.root && tree.currentTurnId !== undefined) {
      yield* append(store, tree.root, [draft({ sessionId: tree.root.session.sessionId, turnId: tree.currentTurnId })])
    }
  })

export const appendToTree = (
  store: SessionStore,
  session: SessionRuntime,
  turnId: TurnId,
  draft: (ids: EventIds) => Draft
): Effect.Effect<void> => locked(session, appendToTreeUnlocked(store, session, turnId, draft))
