/**
 * A tree's append-only event log — the source of truth for a tree, a root session and every subagent under it — put
 * together once over a small row-level `Driver`, as `effect/cluster`'s `MessageStorage.makeEncoded` is over its
 * `Encoded` driver.
 *
 * - `createTree` stores a tree's header (its root agent); `treeOf` finds the tree of any of its sessions.
 * - `append(treeId, expectedSeq, events, fence)` adds events all or none: `expectedSeq` must be the log's length
 *   (optimistic concurrency: a writer that lost a race fails with `SeqConflict`, re-reads and decides again), a
 *   callback is resolved at most once (`ResolutionConflict`), and an append made under a lease (`Leases`) checks it
 *   in the same write (a fencing token: a deposed owner's late append fails with `LeaseLost`).
 * - `read` returns the stored events from a cursor; `subscribe` continues with the live ones, gap-free, in a `Queue`;
 *   `tail` is the same as a `Stream`. `changes` tells which trees were appended to, by anyone. Only stored events go
 *   through the log: the live-only ones (a model step's streamed `MessageDelta`s) go through the engine's own channel,
 *   which merges them into its readers' view.
 * - `listOpen` lists the callbacks open across trees (answers from another process).
 *
 * `make(driver)` writes the rest once for every driver: what an append adds to the indexes (sessions, callbacks
 * opened and resolved, turns not ended, paused) derived from its events, the in-process fan-out (`subscribe`, `tail`)
 * and `changes`. A driver stores rows and reads them back: it checks the compare-and-set of a tree's length,
 * the fence and the one resolution per callback in one write, and tells of appends made by others (`follow`). The
 * memory driver is `SessionStore.layerMemory`'s; the SQL one is `@parley/store-sql`'s.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { EventLog, SessionStore } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const program = (sessionId: Ids.SessionId) => Effect.gen(function*() {
 *   const log = yield* EventLog.EventLog
 *   const tree = yield* log.treeOf(sessionId)
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type * as Callback from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as internal from "./internal/eventLog.js"
import type { Lease } from "./Leases.js"
import type * as Outbox from "./Outbox.js"
import type { LeaseLost, ResolutionConflict, SeqConflict, StoreError } from "./StoreError.js"

/**
 * What the log keeps about a tree besides its events: its root agent's definition and when it was created.
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
 * How durable an append must be when it returns: `"sync"` (on disk) or `"relaxed"` (committed and visible, on disk
 * with the next synced append). See `Service.append`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Durability = "sync" | "relaxed"

/**
 * A callback opened and not resolved, as the log indexes it (`listOpen`).
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
 * What an append wrote: `bytes`, the size of its events as the store keeps them — the UTF-8 JSON text of a SQL store's
 * rows — or `undefined` for a store that keeps the events themselves (the memory store). The engine's
 * `parley.store.append` span reports it; an append that wrote nothing (`undefined`) makes no span.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Written {
  readonly bytes: number | undefined
}

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
 * What `changes` leaves out: the appends fenced by the leases of `exceptOwner` (the follower's own).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ChangesOptions {
  readonly exceptOwner?: string | undefined
}

/**
 * The callbacks `listOpen` lists: of one session (not its subagents), of one kind, and/or with a deadline at or before
 * `expiresBy` (epoch millis: the callbacks due by then; those without a deadline are left out).
 *
 * @since 0.1.0
 * @category Models
 */
export interface OpenFilter {
  readonly sessionId?: SessionId | undefined
  readonly kind?: Callback.Kind | undefined
  readonly expiresBy?: number | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Stores a new tree's header; its log starts empty. Creating a tree that exists changes nothing. */
  readonly createTree: (tree: StoredTree) => Effect.Effect<void, StoreError>
  readonly getTree: (treeId: SessionId) => Effect.Effect<Option.Option<StoredTree>, StoreError>
  /** The tree a session belongs to (a root session is its own tree). */
  readonly treeOf: (sessionId: SessionId) => Effect.Effect<Option.Option<SessionId>, StoreError>
  /**
   * Appends events, all or none: `expectedSeq` must be the log's length and the events' `seq`s must follow it; a
   * callback is resolved at most once; with a `fence` (the lease `Leases.claim` gave), the tree's owner and epoch must
   * still be the fence's. The append is visible to every reader when it returns.
   *
   * `durability` (default `"sync"`): a `"sync"` append is on disk when it returns (a durable point: a callback anyone
   * may see, a tool's start before its side effect, an answer before its caller hears it was accepted); a
   * `"relaxed"` one is committed and visible, and reaches the disk with the next synced append (or the database's own
   * checkpoint): a process killed meanwhile loses nothing, a machine that loses power may lose relaxed appends after
   * the last synced one (never one before it). A driver that always syncs may ignore it.
   */
  readonly append: (
    treeId: SessionId,
    expectedSeq: number,
    events: ReadonlyArray<TurnEvent>,
    fence?: Lease | undefined,
    durability?: Durability
  ) => Effect.Effect<Written, SeqConflict | ResolutionConflict | LeaseLost | StoreError>
  /** The stored events with `seq >= from`. */
  readonly read: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  /**
   * A queue of the stored events with `seq >= from`, then every event appended later, in order, gap-free. With
   * `sessionId`, only that session's events. The subscription ends with the scope. The queue ends (`Cause.Done`) at once when there is no such
   * tree, and fails with the `StoreError` that stops it.
   */
  readonly subscribe: (
    treeId: SessionId,
    from: number,
    sessionId?: SessionId | undefined
  ) => Effect.Effect<Queue.Dequeue<TurnEvent, StoreError | Cause.Done>, StoreError, Scope.Scope>
  /**
   * A queue of the trees appended to from now on (with the `seq` the log reached), by anyone, as long as the scope
   * lives. With `exceptOwner`, the appends fenced by that owner's leases are left out: an engine following the log
   * for what others append is not woken by its own appends.
   */
  readonly changes: (
    options?: ChangesOptions
  ) => Effect.Effect<Queue.Dequeue<Change, StoreError | Cause.Done>, never, Scope.Scope>
  /** The callbacks open across trees, oldest first, optionally of one session (not its subagents) or one kind. */
  readonly listOpen: (filter?: OpenFilter) => Effect.Effect<ReadonlyArray<OpenCallbackRow>, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class EventLog extends Context.Service<EventLog, Service>()("@parley/log/EventLog") {}

/**
 * One append as a driver writes it: the events, and what they add to the indexes, derived once by `make`.
 *
 * @since 0.1.0
 * @category Driver
 */
export interface AppendRows {
  readonly treeId: SessionId
  /** The log's length the append expects (a compare-and-set): its events' `seq`s follow it. */
  readonly expectedSeq: number
  readonly events: ReadonlyArray<TurnEvent>
  /** Each session the events name, with the `seq` of its first event here: the driver files the ones it lacks. */
  readonly sessions: ReadonlyArray<{ readonly sessionId: SessionId; readonly seq: number }>
  /** The callbacks the events open, with their deadlines (epoch millis) when they have one. */
  readonly opened: ReadonlyArray<OpenCallbackRow & { readonly expiresAt: number | undefined }>
  /** The callbacks the events resolve: each at most once, ever (else the append fails with `ResolutionConflict`). */
  readonly resolved: ReadonlyArray<{
    readonly callbackId: CallbackId
    readonly seq: number
    readonly resolution: string
  }>
  /** How many turns the events queue less how many they end. */
  readonly openTurns: number
  /** The events the webhook outbox reports (`Outbox.kindOf`): the driver writes their entries in the same write. */
  readonly reported: ReadonlyArray<{ readonly seq: number; readonly kind: Outbox.Kind }>
  /** Whether the last event is a `TurnBlocked`: the tree then waits on callbacks only (`Leases.claimPaused`). */
  readonly paused: boolean
  /** The lease the tree's owner and epoch must still match, when the append is made under one. */
  readonly fence: Lease | undefined
  readonly durability: Durability
}

/**
 * The row-level driver `make` builds the log on: rows in, rows out, no events' logic. `append` writes one
 * `AppendRows` all or none — the compare-and-set of the tree's length (`SeqConflict` with the length it has), the
 * `fence` (`LeaseLost`), each resolution at most once (`ResolutionConflict`), the indexes — and fails with
 * `StoreError` when there is no such tree. `readRecent` serves the subscribers (it may answer from what the driver
 * remembers of its own appends); `read` is always the stored truth. `follow` tells `moved` of every append made by
 * someone else (another process on the same database) as long as its scope lives; a driver of one process has none.
 *
 * @since 0.1.0
 * @category Driver
 */
export interface Driver {
  readonly createTree: (tree: StoredTree) => Effect.Effect<void, StoreError>
  readonly getTree: (treeId: SessionId) => Effect.Effect<Option.Option<StoredTree>, StoreError>
  readonly treeOf: (sessionId: SessionId) => Effect.Effect<Option.Option<SessionId>, StoreError>
  /** The tree's length, `None` when there is no such tree. */
  readonly nextSeq: (treeId: SessionId) => Effect.Effect<Option.Option<number>, StoreError>
  readonly append: (
    rows: AppendRows
  ) => Effect.Effect<Written, SeqConflict | ResolutionConflict | LeaseLost | StoreError>
  readonly read: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  readonly readRecent: (treeId: SessionId, from: number) => Effect.Effect<ReadonlyArray<TurnEvent>, StoreError>
  readonly listOpen: (filter?: OpenFilter) => Effect.Effect<ReadonlyArray<OpenCallbackRow>, StoreError>
  readonly follow: (
    moved: (treeId: SessionId, nextSeq: number) => Effect.Effect<void>
  ) => Effect.Effect<void, StoreError, Scope.Scope>
}

/**
 * The event log over a driver: the indexes' rows of each append derived from its events, the in-process fan-out and
 * `changes` (after this process's appends at once; after others' when the driver's `follow` tells of them).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: (driver: Driver) => Effect.Effect<Service, StoreError, Scope.Scope> = internal.make

/**
 * The rows one append writes (what `make` hands its driver): exposed for drivers' own tests.
 *
 * @since 0.1.0
 * @category Driver
 */
export const rowsOf: (
  treeId: SessionId,
  expectedSeq: number,
  events: ReadonlyArray<TurnEvent>,
  fence: Lease | undefined,
  durability: Durability
) => AppendRows = internal.rowsOf

/**
 * A log's `changes` as a `Stream`.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const changes = (log: Service, options?: ChangesOptions): Stream.Stream<Change, StoreError> =>
  Stream.unwrap(Effect.map(log.changes(options), Stream.fromQueue))

/**
 * A log's `subscribe` as a `Stream`: the stored events with `seq >= from`, then the live ones.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const tail = (
  log: Service,
  treeId: SessionId,
  from: number,
  sessionId?: SessionId | undefined
): Stream.Stream<TurnEvent, StoreError> =>
  Stream.unwrap(Effect.map(log.subscribe(treeId, from, sessionId), Stream.fromQueue))
