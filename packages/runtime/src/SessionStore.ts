/**
 * The session store: the source of truth for a session is its append-only event log. Everything else — turn
 * states, open callbacks, the conversation sent to the model — is derived from it.
 *
 * `append` takes events whose `seq` continues the log (optimistic concurrency: a writer that lost a race fails with
 * `SeqConflict` and re-derives), `read` returns the stored events from a cursor and `tail` continues with live ones.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { SessionStore } from "@parley/runtime"
 * import { Effect, Stream } from "effect"
 *
 * const program = (sessionId: Ids.SessionId) => Effect.gen(function*() {
 *   const store = yield* SessionStore.SessionStore
 *   const events = yield* store.read(sessionId, 0)
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { SessionId, TurnId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import * as internal from "./internal/memoryStore.js"

/**
 * What the store keeps about a session besides its log.
 *
 * @since 0.1.0
 * @category Models
 */
export interface StoredSession {
  readonly sessionId: SessionId
  readonly agent: AgentSpec
  readonly parent: { readonly sessionId: SessionId; readonly turnId: TurnId } | undefined
  readonly createdAt: DateTime.Utc
}

/**
 * An append lost a race: the log had moved on. Re-derive and try again.
 *
 * @since 0.1.0
 * @category Errors
 */
export class SeqConflict extends Data.TaggedError("SeqConflict")<{
  readonly sessionId: SessionId
  readonly expected: number
  readonly actual: number
}> {}

/**
 * A second resolution of one callback: exactly one `CallbackResolved` is stored per callback id.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ResolutionConflict extends Data.TaggedError("ResolutionConflict")<{
  readonly sessionId: SessionId
  readonly callbackId: string
}> {}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly createSession: (session: StoredSession) => Effect.Effect<void>
  readonly getSession: (sessionId: SessionId) => Effect.Effect<Option.Option<StoredSession>>
  /**
   * Appends events, all or none: the first one's `seq` must be the log's length, and a callback is resolved at most
   * once.
   */
  readonly append: (
    sessionId: SessionId,
    events: ReadonlyArray<TurnEvent>
  ) => Effect.Effect<void, SeqConflict | ResolutionConflict>
  /** The stored events with `seq >= from`. */
  readonly read: (sessionId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>>
  /** The stored events with `seq >= from`, then every event appended later, in order, gap-free. */
  readonly tail: (sessionId: SessionId, from: number) => Stream.Stream<TurnEvent>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class SessionStore extends Context.Tag("@parley/runtime/SessionStore")<SessionStore, Service>() {}

/**
 * An in-memory store (tests, examples, single-process programs that need no durability).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Service> = internal.make

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.effect(SessionStore, makeMemory)
