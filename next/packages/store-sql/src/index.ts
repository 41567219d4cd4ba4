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
