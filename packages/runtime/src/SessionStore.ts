/**
 * The session store: the source of truth for a tree — a root session and every subagent under it — is its
 * append-only event log. Everything else (turn states, open callbacks, the conversation sent to the model) is derived
 * from it by `TreeState.fold`.
 *
 * - `createTree` stores a tree's header (its root agent); `treeOf` finds the tree of any of its sessions.
 * - `append(treeId, expectedSeq, events)` adds events all or none: `expectedSeq` must be the log's length (optimistic
 *   concurrency: a writer that lost a race fails with `SeqConflict`, re-reads and decides again), and a callback is
 *   resolved at most once (`ResolutionConflict`).
 * - `read` returns the stored events from a cursor; `tail` continues with the live ones, gap-free, and delivers the
 *   live-only events `publish` hands it (streamed `MessageDelta`s) to readers in this process.
 * - `changes` tells which trees were appended to, so an engine notices appends made by others.
 *
 * Every failure of the storage itself is a typed `StoreError`.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { SessionStore } from "@parley/runtime"
 * import { Effect } from "effect"
 *
 * const program = (sessionId: Ids.SessionId) => Effect.gen(function*() {
 *   const store = yield* SessionStore.SessionStore
 *   const tree = yield* store.treeOf(sessionId)
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import * as internal from "./internal/memoryStore.js"

/**
 * What the store keeps about a tree besides its log: its root agent's definition and when it was created.
 *
 * @since 0.1.0
 * @category Models
 */
export interface StoredTree {
  readonly treeId: SessionId
  readonly agent: AgentSpec
  readonly createdAt: DateTime.Utc
}

/**
 * An append lost a race: the log had moved on. Re-read, decide again.
 *
 * @since 0.1.0
 * @category Errors
 */
export class SeqConflict extends Schema.TaggedError<SeqConflict>("@parley/runtime/SessionStore/SeqConflict")(
  "SeqConflict",
  { treeId: Schema.String, expected: Schema.Number, actual: Schema.Number }
) {
  override get message(): string {
    return `append to tree ${this.treeId} expected seq ${this.expected}, the log is at ${this.actual}`
  }
}

/**
 * A second resolution of one callback: exactly one `CallbackResolved` is stored per callback id.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ResolutionConflict
  extends Schema.TaggedError<ResolutionConflict>("@parley/runtime/SessionStore/ResolutionConflict")(
    "ResolutionConflict",
    { treeId: Schema.String, callbackId: Schema.String }
  )
{
  override get message(): string {
    return `callback ${this.callbackId} of tree ${this.treeId} is already resolved`
  }
}

/**
 * The storage failed (I/O, a broken connection, a row that does not decode).
 *
 * @since 0.1.0
 * @category Errors
 */
export class StoreError extends Schema.TaggedError<StoreError>("@parley/runtime/SessionStore/StoreError")(
  "StoreError",
  { method: Schema.String, description: Schema.String, cause: Schema.optional(Schema.Defect) }
) {
  override get message(): string {
    return `SessionStore.${this.method}: ${this.description}`
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Stores a new tree's header; its log starts empty. */
  readonly createTree: (tree: StoredTree) => Effect.Effect<void, StoreError>
  readonly getTree: (treeId: SessionId) => Effect.Effect<Option.Option<StoredTree>, StoreError>
  /** The tree a session belongs to (a root session is its own tree). */
  readonly treeOf: (sessionId: SessionId) => Effect.Effect<Option.Option<SessionId>, StoreError>
  /**
   * Appends events, all or none: `expectedSeq` must be the log's length and the events' `seq`s must follow it; a
   * callback is resolved at most once.
   */
  readonly append: (
    treeId: SessionId,
    expectedSeq: number,
    events: ReadonlyArray<TurnEvent>
  ) => Effect.Effect<void, SeqConflict | ResolutionConflict | StoreError>
  /** The stored events with `seq >= from`. */
  readonly read: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  /**
   * The stored events with `seq >= from`, then every event appended later, in order, gap-free; with them the live-only
   * events `publish` gives in this process (after the event their `seq` names).
   */
  readonly tail: (treeId: SessionId, from: number) => Stream.Stream<TurnEvent, StoreError>
  /** Hands live-only events (streamed deltas) to the tails of this process. Nothing is stored. */
  readonly publish: (treeId: SessionId, events: ReadonlyArray<TurnEvent>) => Effect.Effect<void>
  /** The trees appended to from now on (with the `seq` the log reached), by anyone. */
  readonly changes: Stream.Stream<{ readonly treeId: SessionId; readonly nextSeq: number }, StoreError>
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
