/**
 * The log layer's services in one: `EventLog` (a tree's append-only log, its fan-out and `changes`), `Leases` (who
 * runs a tree's work), `Snapshots` (the latest snapshot of a tree's projection), `Secrets` (a tree's connector
 * credentials) and `Outbox` (the webhook deliveries, written with the events they report). A store — the memory one here, `@parley/store-sql`'s SQLite and PostgreSQL ones — is ONE layer that
 * provides the four (`Layer.Layer<SessionStore>`), built over its driver; a program picks it at the edge and never
 * names the parts.
 *
 * - `layerMemory` / `makeMemory`: the memory driver (tests, examples, single-process programs that need no
 *   durability).
 * - `Services` is the four as one record (`services` reads it from context, `layer` provides one): what tests and the
 *   engine hold, and how a test replaces one method of one part.
 *
 * Every failure is of the `StoreError` family (`StoreError.StoreFailure`); its members are re-exported here under
 * their names, as are the models of the parts (`Lease`, `StoredTree`, `Snapshot`, …), the same types.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { SessionStore } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const program = (sessionId: Ids.SessionId) => Effect.gen(function*() {
 *   const store = yield* SessionStore.services
 *   const tree = yield* store.eventLog.treeOf(sessionId)
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import * as EventLog from "./EventLog.js"
import * as memory from "./internal/memoryDriver.js"
import * as Leases from "./Leases.js"
import * as Outbox from "./Outbox.js"
import * as Secrets from "./Secrets.js"
import * as Snapshots from "./Snapshots.js"
import * as StoreErrors from "./StoreError.js"

/**
 * What a store's layer provides: the log layer's four services.
 *
 * @since 0.1.0
 * @category Context
 */
export type SessionStore = EventLog.EventLog | Leases.Leases | Snapshots.Snapshots | Secrets.Secrets | Outbox.Outbox

/**
 * The four services as one record.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Services {
  readonly eventLog: EventLog.Service
  readonly leases: Leases.Service
  readonly snapshots: Snapshots.Service
  readonly secrets: Secrets.Service
  readonly outbox: Outbox.Service
}

/**
 * The four services of the store in context, as one record.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const services: Effect.Effect<Services, never, SessionStore> = Effect.all({
  eventLog: Effect.service(EventLog.EventLog),
  leases: Effect.service(Leases.Leases),
  snapshots: Effect.service(Snapshots.Snapshots),
  secrets: Effect.service(Secrets.Secrets),
  outbox: Effect.service(Outbox.Outbox)
})

/**
 * The four services of a store's context (a store's layer, built), as one record.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const get = (context: Context.Context<SessionStore>): Services => ({
  eventLog: Context.get(context, EventLog.EventLog),
  leases: Context.get(context, Leases.Leases),
  snapshots: Context.get(context, Snapshots.Snapshots),
  secrets: Context.get(context, Secrets.Secrets),
  outbox: Context.get(context, Outbox.Outbox)
})

/**
 * The context of a store's four services.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const context = (services: Services): Context.Context<SessionStore> =>
  Context.make(EventLog.EventLog, services.eventLog).pipe(
    Context.add(Leases.Leases, services.leases),
    Context.add(Snapshots.Snapshots, services.snapshots),
    Context.add(Secrets.Secrets, services.secrets),
    Context.add(Outbox.Outbox, services.outbox)
  )

/**
 * A store's four services as one layer.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (services: Services): Layer.Layer<SessionStore> => Layer.succeedContext(context(services))

/**
 * The memory driver of the event log, with the leases, snapshots and secrets kept beside its rows (they share its
 * maps: a claim fences the driver's appends).
 *
 * @since 0.1.0
 * @category Models
 */
export interface MemoryDriver {
  readonly driver: EventLog.Driver
  readonly leases: Leases.Service
  readonly snapshots: Snapshots.Service
  readonly secrets: Secrets.Service
  readonly outbox: Outbox.Service
}

/**
 * A new memory driver (`makeMemory` builds the event log on it; a driver's own tests use it alone).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeMemoryDriver: Effect.Effect<MemoryDriver> = memory.make

/**
 * A store in memory over the memory driver (tests, examples, single-process programs that need no durability).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Services> = Effect.gen(function*() {
  const { driver, leases, outbox, secrets, snapshots } = yield* memory.make
  // The memory driver follows no other process: the scope `make` starts its `follow` in holds nothing.
  const eventLog = yield* Effect.scoped(EventLog.make(driver))
  return { eventLog, leases, snapshots, secrets, outbox }
}).pipe(Effect.orDie)

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.effectContext(Effect.map(makeMemory, context))

/**
 * A store's `changes` as a `Stream` (`EventLog.changes`).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const changes = (store: Services): Stream.Stream<Change, StoreError> => EventLog.changes(store.eventLog)

/**
 * A store's `subscribe` as a `Stream` (`EventLog.tail`).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const tail = (
  store: Services,
  treeId: SessionId,
  from: number,
  sessionId?: SessionId | undefined
): Stream.Stream<TurnEvent, StoreError> => EventLog.tail(store.eventLog, treeId, from, sessionId)

/**
 * `EventLog.StoredTree`.
 *
 * @since 0.1.0
 * @category Models
 */
export type StoredTree = EventLog.StoredTree

/**
 * `EventLog.Durability`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Durability = EventLog.Durability

/**
 * `EventLog.OpenCallbackRow`.
 *
 * @since 0.1.0
 * @category Models
 */
export type OpenCallbackRow = EventLog.OpenCallbackRow

/**
 * `EventLog.Change`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Change = EventLog.Change

/**
 * `Leases.Lease`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Lease = Leases.Lease

/**
 * `Leases.UnfinishedTree`.
 *
 * @since 0.1.0
 * @category Models
 */
export type UnfinishedTree = Leases.UnfinishedTree

/**
 * `Leases.PausedClaim`.
 *
 * @since 0.1.0
 * @category Models
 */
export type PausedClaim = Leases.PausedClaim

/**
 * `Snapshots.Snapshot`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Snapshot = Snapshots.Snapshot

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
