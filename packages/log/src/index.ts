/**
 * A tree's append-only event log over a row-level driver (`EventLog` Tag, `Driver`, `make`): appends, reads, the
 * in-process fan-out (`subscribe`, `tail`) and `changes`, written once for every driver.
 *
 * @since 0.1.0
 */
export * as EventLog from "./EventLog.js"

/**
 * Leases: who runs a tree's work (`heartbeat`, `claim`, `retire`), and what recovery takes up (`unfinished`,
 * `claimPaused`).
 *
 * @since 0.1.0
 */
export * as Leases from "./Leases.js"

/**
 * The webhook outbox: entries written with the events they report, their deliveries per endpoint (`claim`, `record`,
 * `list`, `redeliver`).
 *
 * @since 0.1.0
 */
export * as Outbox from "./Outbox.js"

/**
 * Secrets of trees (a connector's credentials, as ciphertext): `save`, `load`, `delete`.
 *
 * @since 0.1.0
 */
export * as Secrets from "./Secrets.js"

/**
 * The log layer's services in one: `EventLog`, `Leases`, `Snapshots` and `Secrets` (`layerMemory`, `Services`,
 * `layer`).
 *
 * @since 0.1.0
 */
export * as SessionStore from "./SessionStore.js"

/**
 * A snapshot of a tree's projection as JSON text (`encode` / `decode`, `version`): the
 * engine's storage format, loaded with the events after it.
 *
 * @since 0.1.0
 */
export * as SnapshotCodec from "./SnapshotCodec.js"

/**
 * Snapshots of trees' projections: the latest per tree (`save`, `load`), a cache of the log's fold.
 *
 * @since 0.1.0
 */
export * as Snapshots from "./Snapshots.js"

/**
 * The errors of the session store, one family: `StoreError`, `SeqConflict`, `ResolutionConflict`, `LeaseLost`
 * (`StoreFailure`, `isStoreError`).
 *
 * @since 0.1.0
 */
export * as StoreError from "./StoreError.js"

/**
 * The state of a tree as a pure projection of its log: `evolve` / `fold`, and the queries the engine decides from.
 *
 * @since 0.1.0
 */
export * as TreeState from "./TreeState.js"
