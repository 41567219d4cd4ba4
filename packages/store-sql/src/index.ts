/**
 * The `SessionStore` of `@parley/runtime` on `@effect/sql`: a SQLite file (the embedded default) or PostgreSQL.
 *
 * - Tables (created by `@effect/sql`'s `Migrator`, recorded in `parley_migrations`): `parley_trees` (header and log
 *   length), `parley_events` (the log, primary key `(tree_id, seq)`, each event's JSON with its schema `version`),
 *   `parley_sessions` (session → tree), `parley_callbacks` (callback id → tree) and `parley_callback_resolutions`
 *   (primary key `callback_id`: a second resolution of a callback inserts nothing and fails its append).
 * - Group commit: concurrent appends (to any trees) share one transaction; a conflicting append fails alone (the
 *   others are then run again, each in its own SAVEPOINT). An append is one compare-and-set of its tree's length: a lost race is a
 *   `SeqConflict`, in this process or in another.
 * - `changes` and `tail` see appends by other processes on the same database: SQLite polls a change counter at once
 *   when a watch of the file (inotify) sees a write, and every 250 ms anyway; PostgreSQL uses LISTEN/NOTIFY. Appends
 *   of this process reach them at once.
 * - Every failure (I/O, a lost connection, a row that does not decode, a failed migration) is a typed `StoreError`.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
 * import { SqlStore } from "@parley/store-sql"
 * import { Layer } from "effect"
 *
 * // Sessions survive restarts: they live in .parley/sessions.db.
 * const Runtime = (models: Models.Service) =>
 *   LocalTransport.layer.pipe(
 *     Layer.provide([
 *       SqlStore.layerSqlite({ filename: ".parley/sessions.db" }),
 *       Connectors.layer([]),
 *       RuntimeTools.layerEmpty,
 *       Models.layer(models)
 *     ])
 *   )
 *
 * // The same on PostgreSQL:
 * const Store = SqlStore.layerPg({ url: "postgres://parley:parley@127.0.0.1:5432/parley" })
 * ```
 *
 * @since 0.1.0
 */
export * as SqlStore from "./SqlStore.js"
