/**
 * The in-process fan-out every store shares, written once: subscribers of a tree's events, gap-free, in mailboxes.
 *
 * @since 0.1.0
 */
export * as Fanout from "./Fanout.js"

/**
 * The session store port: a tree's append-only event log, leases, snapshots and secrets (`SessionStore` Tag,
 * `layerMemory`).
 *
 * @since 0.1.0
 */
export * as SessionStore from "./SessionStore.js"

/**
 * A snapshot of a tree's projection as JSON text (`encodeSnapshot` / `decodeSnapshot`, `snapshotVersion`): the
 * engine's storage format, loaded with the events after it.
 *
 * @since 0.1.0
 */
export * as Snapshot from "./Snapshot.js"

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
