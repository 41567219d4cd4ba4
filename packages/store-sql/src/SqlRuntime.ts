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
import type { Transport } from "@parley/core/Transport"
import type { SessionStore } from "@parley/log/SessionStore"
import type { StoreError } from "@parley/log/StoreError"
import * as Connectors from "@parley/runtime/Connectors"
import * as LocalTransport from "@parley/runtime/LocalTransport"
import * as Models from "@parley/runtime/Models"
import * as RuntimeTools from "@parley/runtime/RuntimeTools"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Layer from "effect/Layer"
import * as SqlStore from "./SqlStore.js"

/**
 * What the runtime runs with, as for `LocalTransport.layerMemory`: `models` (without them, every agent runs on the
 * `LanguageModel` in context), the `connectors` agents can sign in to and the `tools` the runtime runs (none by
 * default), the engine's options.
 *
 * @since 0.1.0
 * @category Models
 */
export type Options = LocalTransport.MemoryOptions

/**
 * The SQLite file and the store's options (`SqlStore.Options`: `synchronous`, `lockTimeout`, …). `filename`
 * defaults to `.parley/sessions.db`, relative to the working directory.
 *
 * @since 0.1.0
 * @category Models
 */
export interface SqliteOptions extends Options, SqlStore.Options {
  readonly filename?: string | undefined
}

/**
 * The default SQLite file: `.parley/sessions.db`, relative to the working directory.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const defaultFilename = ".parley/sessions.db"

const runtimeOver = (
  store: Layer.Layer<SessionStore, StoreError>,
  options: Options
): Layer.Layer<Transport, StoreError, LanguageModel.LanguageModel> =>
  (options.engine === undefined ? LocalTransport.layer : LocalTransport.layerWith(options.engine)).pipe(
    Layer.provide([
      store,
      Connectors.layer(options.connectors ?? []),
      RuntimeTools.layer(...(options.tools ?? [])),
      options.models === undefined ? Models.layerFromContext : Models.layer(options.models)
    ])
  )

const storeOptions = (options: SqlStore.Options): SqlStore.Options => ({
  synchronous: options.synchronous,
  busyTimeout: options.busyTimeout,
  lockTimeout: options.lockTimeout,
  pollInterval: options.pollInterval,
  watch: options.watch,
  writers: options.writers,
  maxBatch: options.maxBatch
})

/**
 * The in-process runtime over a SQLite file (`SqlStore.layerSqlite`): `LocalTransport.layer` with the store, the
 * `connectors` and runtime `tools` given, and the models. With `models`, it needs nothing; without, every agent runs
 * on the `LanguageModel` in context. Fails with a `StoreError` when the file cannot be opened.
 *
 * @since 0.1.0
 * @category Layers
 */
export function layerSqlite(
  options: SqliteOptions & { readonly models: Models.Service }
): Layer.Layer<Transport, StoreError>
export function layerSqlite(options?: SqliteOptions): Layer.Layer<Transport, StoreError, LanguageModel.LanguageModel>
export function layerSqlite(
  options: SqliteOptions = {}
): Layer.Layer<Transport, StoreError, LanguageModel.LanguageModel> {
  return runtimeOver(
    SqlStore.layerSqlite({ ...storeOptions(options), filename: options.filename ?? defaultFilename }),
    options
  )
}

/**
 * The in-process runtime over PostgreSQL (`SqlStore.layerPg`), otherwise as `layerSqlite`.
 *
 * @since 0.1.0
 * @category Layers
 */
export function layerPg(
  options: Options & SqlStore.PgOptions & { readonly models: Models.Service }
): Layer.Layer<Transport, StoreError>
export function layerPg(
  options: Options & SqlStore.PgOptions
): Layer.Layer<Transport, StoreError, LanguageModel.LanguageModel>
export function layerPg(
  options: Options & SqlStore.PgOptions
): Layer.Layer<Transport, StoreError, LanguageModel.LanguageModel> {
  const { connectors: _c, engine: _e, models: _m, tools: _t, ...store } = options
  return runtimeOver(SqlStore.layerPg(store), options)
}
