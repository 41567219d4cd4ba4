/**
 * The whole durable runtime in one layer: `LocalTransport`'s in-process engine over a SQL session store, with the
 * connectors, the tools the runtime runs and the models. `SqlRuntime.layerSqlite()` is the durable twin of
 * `LocalTransport.layerMemory()`: sessions live in a SQLite file (`.parley/sessions.db` by default, its folder
 * created when missing), so they survive a restart and another process can answer their callbacks by id.
 *
 * (It lives in `@parley/store-sql` because `@parley/runtime` does not depend on a SQL driver.)
 *
 * @example
 * ```ts
 * import { Agent } from "@parley/core"
 * import { Connectors } from "@parley/runtime"
 * import { SqlRuntime } from "@parley/store-sql"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect, Layer } from "effect"
 *
 * const assistant = Agent.make({ name: "assistant", model: "mistral-large-latest", instructions: "Be brief." })
 *
 * // sessions in .parley/sessions.db; every agent on the LanguageModel in context (scripted here)
 * const Runtime = SqlRuntime.layerSqlite({ connectors: [Connectors.demoMailbox()] }).pipe(
 *   Layer.provide(ScriptedModel.layerFunction(() => ScriptedModel.text("Hi!")))
 * )
 *
 * const program = Agent.run(assistant, "Hello").pipe(Effect.provide(Runtime))
 * ```
 *
 * @since 0.1.0
 */
export * as SqlRuntime from "./SqlRuntime.js"

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
 * // Sessions survive restarts: they live in .parley/sessions.db. (`SqlRuntime.layerSqlite` is this in one layer.)
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

/**
 * An `effect/sql` client for a SQLite file on Node's built-in `node:sqlite` (`DatabaseSync`, prepared statements; no
 * native addon): the store's embedded database. It stands where a stable `@effect/sql-sqlite-node` for Effect 4.1
 * will: this module is the whole driver, so such a release replaces this one file.
 *
 * - One connection, shared through a semaphore: a statement, a transaction (`withTransaction`) or a `reserve`d
 *   connection holds it until it ends, so a transaction never sees another fiber's statements. Nested transactions
 *   are savepoints (`SAVEPOINT` / `ROLLBACK TO` / `RELEASE`).
 * - WAL mode (unless `disableWAL`) and `synchronous` (`"full"` by default: every commit syncs the write-ahead log)
 *   are set when the file opens. A top-level transaction starts with `BEGIN IMMEDIATE`: it takes the write lock
 *   first, so a read never has to turn into a write that another process already holds.
 * - Waiting for another process's lock never blocks the event loop. `node:sqlite` is synchronous and SQLite's own busy
 *   handler sleeps on the thread (every fiber with it), so the connection's own `busy_timeout` is 0 and a database
 *   reported busy (`SQLITE_BUSY`, errcode 5, or `SQLITE_LOCKED`) is tried again after an asynchronous pause (1 ms,
 *   2 ms, … then every 20 ms), for `busyTimeout` in all (5 seconds by default), on the wall clock. A statement outside a
 *   transaction and the `BEGIN` of a transaction give the connection back between two tries (the process's other
 *   fibers read meanwhile); a `COMMIT` keeps it (its transaction is open). Past `busyTimeout` the failure is a
 *   `SqlError` whose reason is a `LockTimeoutError`.
 * - Every failure is a `SqlError`, its reason classified from SQLite's result code (`UniqueViolation`,
 *   `ConstraintError`, `LockTimeoutError`, `ConnectionError`, …), the `node:sqlite` error as its cause. Opening a file
 *   that cannot be opened fails `make` with one.
 * - `PRAGMA data_version` moves when another connection (another process) commits: what a watch for other writers'
 *   commits polls. The connection is one, so the client's own commits never move it.
 *
 * @example
 * ```ts
 * import { SqliteClient } from "@parley/store-sql"
 * import { Effect } from "effect"
 * import { SqlClient } from "effect/sql"
 *
 * const program = Effect.gen(function*() {
 *   const sql = yield* SqlClient.SqlClient
 *   yield* sql`CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`
 *   yield* sql.withTransaction(sql`INSERT INTO notes (text) VALUES (${"hello"})`)
 *   return yield* sql<{ readonly text: string }>`SELECT text FROM notes`
 * }).pipe(Effect.provide(SqliteClient.layer({ filename: "notes.db" })))
 * ```
 *
 * @since 0.1.0
 */
export * as SqliteClient from "./SqliteClient.js"
