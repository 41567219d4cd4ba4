/**
 * The session store: the source of truth for a tree — a root session and every subagent under it — is its
 * append-only event log. Everything else (turn states, open callbacks, the conversation sent to the model) is derived
 * from it by `TreeState.fold`.
 *
 * - `createTree` stores a tree's header (its root agent); `treeOf` finds the tree of any of its sessions.
 * - `append(treeId, expectedSeq, events)` adds events all or none: `expectedSeq` must be the log's length (optimistic
 *   concurrency: a writer that lost a race fails with `SeqConflict`, re-reads and decides again), and a callback is
 *   resolved at most once (`ResolutionConflict`).
 * - `read` returns the stored events from a cursor; `subscribe` continues with the live ones, gap-free, in a `Mailbox`
 *   (no `Stream` to run: a reader takes what came with `takeAll`), and delivers the live-only events `publish` hands
 *   it (streamed `MessageDelta`s) to readers in this process. `tail` is the same as a `Stream`.
 * - `changes` tells which trees were appended to (a mailbox too), so an engine notices appends made by others.
 * - Leases: one engine (an `owner`, alive while it renews `heartbeat`) runs a tree's work. `claim` makes the caller
 *   the tree's owner when the tree has none, is its own, or its owner's heartbeat lapsed; every claim raises the tree's
 *   `epoch` (the same owner's too: a process restarted under its name fences off the one before it). An append made with a `Lease` checks it in the same transaction (a fencing token): a deposed
 *   owner's late append fails with `LeaseLost`. Appends without a lease (answers from any process) are checked by
 *   `expectedSeq` and the one-resolution rule only.
 * - `unfinished` lists the trees with turns not ended that an owner may take up (recovery); `listOpen` lists the
 *   callbacks open across trees (answers from another process).
 * - Snapshots: `saveSnapshot` keeps the latest snapshot of a tree's projection (`Snapshot.encodeSnapshot`, taken at
 *   a `seq`), never an older one; `loadSnapshot` returns it, so a long tree is loaded from it and the events after it.
 *   A snapshot is a cache of the log's fold, never the truth: a store may drop it.
 *
 * Every failure is of the `StoreError` family (`StoreError.StoreFailure`): the storage itself failing is a typed
 * `StoreError`, an append that may not be made a `SeqConflict`, `ResolutionConflict` or `LeaseLost`.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { SessionStore } from "@parley/log"
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
import type * as Callback from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as internal from "./internal/memoryStore.js"
import * as StoreErrors from "./StoreError.js"

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
 * An append lost a race: the log had moved on. Re-read, decide again — `StoreError.SeqConflict`, the same class.
 *
 * @since 0.1.0
 * @category Errors
 */
export const SeqConflict: typeof StoreErrors.SeqConflict = StoreErrors.SeqConflict

/**
 * @since 0.1.0
 * @category Errors
 */
export type SeqConflict = StoreErrors.SeqConflict

/**
 * A second resolution of one callback — `StoreError.ResolutionConflict`, the same class.
 *
 * @since 0.1.0
 * @category Errors
 */
export const ResolutionConflict: typeof StoreErrors.ResolutionConflict = StoreErrors.ResolutionConflict

/**
 * @since 0.1.0
 * @category Errors
 */
export type ResolutionConflict = StoreErrors.ResolutionConflict

/**
 * An append made under a lease another owner took over: nothing was written — `StoreError.LeaseLost`, the same class.
 *
 * @since 0.1.0
 * @category Errors
 */
export const LeaseLost: typeof StoreErrors.LeaseLost = StoreErrors.LeaseLost

/**
 * @since 0.1.0
 * @category Errors
 */
export type LeaseLost = StoreErrors.LeaseLost

/**
 * The storage failed (I/O, a broken connection, a row that does not decode) — `StoreError.StoreError`, the same class.
 *
 * @since 0.1.0
 * @category Errors
 */
export const StoreError: typeof StoreErrors.StoreError = StoreErrors.StoreError

/**
 * @since 0.1.0
 * @category Errors
 */
export type StoreError = StoreErrors.StoreError

/**
 * The right to run a tree's work, as `claim` gave it: the fencing token of the owner's appends.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Lease {
  readonly owner: string
  readonly epoch: number
}

/**
 * How durable an append must be when it returns: `"sync"` (on disk) or `"relaxed"` (committed and visible, on disk
 * with the next synced append). See `Service.append`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Durability = "sync" | "relaxed"

/**
 * A callback opened and not resolved, as the store indexes it (`listOpen`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface OpenCallbackRow {
  readonly treeId: SessionId
  readonly sessionId: SessionId
  readonly turnId: TurnId
  readonly callbackId: CallbackId
  readonly kind: Callback.Kind
  /** The `seq` of its `CallbackOpened`. */
  readonly seq: number
}

/**
 * A tree with turns not ended, and its owner when it has one.
 *
 * @since 0.1.0
 * @category Models
 */
export interface UnfinishedTree {
  readonly treeId: SessionId
  readonly owner: string | undefined
}

/**
 * The paused trees an owner claimed in one go (`claimPaused`), with the deadlines of their open callbacks.
 *
 * @since 0.1.0
 * @category Models
 */
export interface PausedClaim {
  readonly trees: ReadonlyArray<{ readonly treeId: SessionId; readonly lease: Lease }>
  /** When each open callback of those trees expires (epoch millis); callbacks without a deadline are left out. */
  readonly deadlines: ReadonlyArray<{
    readonly treeId: SessionId
    readonly callbackId: CallbackId
    readonly expiresAt: number
  }>
}

/**
 * A snapshot of a tree's projection, as the store keeps it: the state after the events before `seq`, as JSON text
 * (`Snapshot.encodeSnapshot`), and the layout it was written with (`Snapshot.snapshotVersion`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Snapshot {
  /** The length of the log the state covers (its `nextSeq`): the events from `seq` on come after it. */
  readonly seq: number
  readonly version: number
  readonly state: string
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
   * callback is resolved at most once. The append is visible to every reader when it returns.
   *
   * `durability` (default `"sync"`): a `"sync"` append is on disk when it returns (a durable point: a callback anyone
   * may see, a tool's start before its side effect, an answer before its caller hears it was accepted); a
   * `"relaxed"` one is committed and visible, and reaches the disk with the next synced append (or the database's own
   * checkpoint): a process killed meanwhile loses nothing, a machine that loses power may lose relaxed appends after
   * the last synced one (never one before it). A store that always syncs may ignore it.
   */
  readonly append: (
    treeId: SessionId,
    expectedSeq: number,
    events: ReadonlyArray<TurnEvent>,
    lease?: Lease | undefined,
    durability?: Durability
  ) => Effect.Effect<void, SeqConflict | ResolutionConflict | LeaseLost | StoreError>
  /** The stored events with `seq >= from`. */
  readonly read: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  /**
   * A mailbox of the stored events with `seq >= from`, then every event appended later, in order, gap-free; with them
   * the live-only events `publish` gives in this process (after the event their `seq` names). With `sessionId`, only
   * that session's events. The subscription ends with the scope. The mailbox is done at once when there is no such
   * tree, and fails with the `StoreError` that stops it.
   */
  readonly subscribe: (
    treeId: SessionId,
    from: number,
    sessionId?: SessionId | undefined
  ) => Effect.Effect<Mailbox.ReadonlyMailbox<TurnEvent, StoreError>, StoreError, Scope.Scope>
  /** Hands live-only events (streamed deltas) to the tails of this process. Nothing is stored. */
  readonly publish: (treeId: SessionId, events: ReadonlyArray<TurnEvent>) => Effect.Effect<void>
  /**
   * A mailbox of the trees appended to from now on (with the `seq` the log reached), by anyone, as long as the scope
   * lives.
   */
  readonly changes: Effect.Effect<Mailbox.ReadonlyMailbox<Change, StoreError>, never, Scope.Scope>
  /** Keeps `owner` alive until `ttl` from now: its leases hold while it renews this. */
  readonly heartbeat: (owner: string, ttl: Duration.Duration) => Effect.Effect<void, StoreError>
  /** Ends `owner`'s life at once (a clean shutdown): its trees can be claimed by others without waiting. */
  readonly retire: (owner: string) => Effect.Effect<void, StoreError>
  /**
   * Makes `owner` the tree's owner if the tree has none, is `owner`'s, or its owner's heartbeat lapsed, with a new
   * epoch (raised by every claim). The lease is `None` while another owner is alive (or when there is no such tree).
   *
   * With `unconditional: true` the claim takes the tree whoever holds it, alive or not (`None` only when there is no
   * such tree): the claim of an owner that something else placed on the tree (a cluster's shard holder). The epoch
   * rises all the same, so the owner before it can no longer append.
   */
  readonly claim: (
    treeId: SessionId,
    owner: string,
    options?: { readonly unconditional?: boolean | undefined }
  ) => Effect.Effect<Option.Option<Lease>, StoreError>
  /**
   * The trees with turns not ended that `owner` may claim (unowned, its own, or whose owner's heartbeat lapsed) and
   * that have work to resume: paused trees — whose last append ended with `TurnBlocked`, waiting on callbacks only —
   * are `claimPaused`'s.
   */
  readonly unfinished: (owner: string) => Effect.Effect<ReadonlyArray<UnfinishedTree>, StoreError>
  /**
   * Claims, in one go, the paused trees `owner` may claim (as `unfinished` says; those it owns already only when
   * `own`), each with a new epoch, and returns them with their open callbacks' deadlines: recovery claims paused trees
   * without loading them, and loads one when something happens to it (an answer, a deadline).
   */
  readonly claimPaused: (owner: string, own: boolean) => Effect.Effect<PausedClaim, StoreError>
  /** The callbacks open across trees, oldest first, optionally of one session (not its subagents) or one kind. */
  readonly listOpen: (filter?: {
    readonly sessionId?: SessionId | undefined
    readonly kind?: Callback.Kind | undefined
  }) => Effect.Effect<ReadonlyArray<OpenCallbackRow>, StoreError>
  /**
   * Keeps `snapshot` as the tree's latest, unless the stored one has a higher `seq` (a snapshot never moves backwards;
   * one at the same `seq` replaces it). A snapshot of a tree the store does not have is not kept.
   */
  readonly saveSnapshot: (treeId: SessionId, snapshot: Snapshot) => Effect.Effect<void, StoreError>
  /** The tree's latest snapshot, if one was saved. */
  readonly loadSnapshot: (treeId: SessionId) => Effect.Effect<Option.Option<Snapshot>, StoreError>
  /**
   * Keeps a secret of a tree under `name` (a connector's credentials), replacing the one it had. The store keeps the
   * value as it is given: `Credentials` encrypts it first, so the store only ever holds ciphertext.
   */
  readonly saveSecret: (treeId: SessionId, name: string, value: string) => Effect.Effect<void, StoreError>
  /** The secret of a tree under `name`, as it was saved. */
  readonly loadSecret: (treeId: SessionId, name: string) => Effect.Effect<Option.Option<string>, StoreError>
  /** Forgets the secret of a tree under `name`. */
  readonly deleteSecret: (treeId: SessionId, name: string) => Effect.Effect<void, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class SessionStore extends Context.Tag("@parley/log/SessionStore")<SessionStore, Service>() {}

/**
 * An append to a tree: the `seq` its log reached.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Change {
  readonly treeId: SessionId
  readonly nextSeq: number
}

/**
 * A store's `changes` as a `Stream`.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const changes = (store: Service): Stream.Stream<Change, StoreError> =>
  Stream.unwrapScoped(Effect.map(store.changes, Mailbox.toStream))

/**
 * A store's `subscribe` as a `Stream`: the stored events with `seq >= from`, then the live ones.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const tail = (
  store: Service,
  treeId: SessionId,
  from: number,
  sessionId?: SessionId | undefined
): Stream.Stream<TurnEvent, StoreError> =>
  Stream.unwrapScoped(Effect.map(store.subscribe(treeId, from, sessionId), Mailbox.toStream))

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
