/**
 * The local Parley server of `parley serve`, `npm start` and `npm run serve`: `ParleyServer.layerSqlite` (or
 * `layerPg`) with its settings read from the environment, the local API key created when none is given, the models
 * chosen (the agents' real models when `MISTRAL_API_KEY` is set, the demo's scripted brains otherwise) and what it
 * serves announced on stdout: the session app's URL (with the local key in its fragment, `/#key=…`: one click opens
 * the app, the key never reaches a request), the key and where it is kept, the `parley callbacks list` hint. Then it
 * is quiet: warnings and errors only, unless `logLevel` asks for more (`info`: a line per request).
 *
 * | setting | variable | default |
 * |---|---|---|
 * | `port` | `PARLEY_PORT` | 8787 |
 * | `host` | `PARLEY_HOST` | `127.0.0.1` |
 * | `dataDir` | `PARLEY_DATA_DIR` | `.parley` (the caller's folder) |
 * | `database` | `PARLEY_DATABASE_URL` | `<dataDir>/sessions.db`; `postgres://…` keeps sessions in PostgreSQL |
 * | `apiKeys` | `PARLEY_API_KEYS` | one local key, created in `<dataDir>/api-key` (mode 0600) |
 * | `linkSecret` | `PARLEY_LINK_SECRET` | the answer links' signing key, created in `<dataDir>/link-secret` (mode 0600) |
 * | `publicUrl` | `PARLEY_PUBLIC_URL` | where answer links point; default: the origin of the request that made them |
 * | `logFormat` | `PARLEY_LOG_FORMAT` | `logfmt` (`json`, `pretty`) |
 * | `logLevel` | `PARLEY_LOG_LEVEL` | `warn`: warnings and errors; `info` adds a line per request, `debug` more; `error` only errors |
 * | `acceptDefinitions` | `PARLEY_ACCEPT_DEFINITIONS` | `false`; `true` lets a key's holder start sessions of definitions of its own (the server's agents still cannot be widened) |
 * | `cluster` | `PARLEY_CLUSTER_RUNNER` | none; `host:port` makes the server a runner of the cluster of its PostgreSQL database (`ClusterServer` of `@parley/cluster`), listening there for the other runners |
 *
 * @example
 * ```ts
 * import { Serve } from "@parley/cli"
 * import { Agent } from "@parley/core"
 * import { Models } from "@parley/runtime"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect } from "effect"
 *
 * const greeter = Agent.make({ name: "greeter", instructions: "Say hello." })
 * const demo: Serve.Demo = {
 *   models: Effect.map(ScriptedModel.fromFunction(() => ScriptedModel.text("Hello!")), (scripted) =>
 *     Models.single(scripted.languageModel)),
 *   agents: [greeter.spec]
 * }
 * // `npm start`'s server: its settings from the environment; it runs until Ctrl-C (under NodeRuntime.runMain)
 * const server = Serve.launch(Serve.settingsFromEnv(process.env, ".parley"), demo)
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import * as MistralModels from "@parley/mistral/MistralModels"
import * as Connectors from "@parley/runtime/Connectors"
import type * as Models from "@parley/runtime/Models"
import * as ParleyServer from "@parley/server/ParleyServer"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as EffectLogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import type * as SocketServer from "effect/socket/SocketServer"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * What a server offers when no real model is configured: the demo agents (listed by the session app) and the
 * scripted brains that answer for them, offline.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Demo {
  /** The demo's models (scripted brains), used unless `MISTRAL_API_KEY` is set. */
  readonly models: Effect.Effect<Models.Service>
  /** The agents a person can start a session of from the session app. */
  readonly agents: ReadonlyArray<AgentSpec>
  /** The connectors the agents sign in to (default: the demo `gmail` mailbox). */
  readonly connectors?: ReadonlyArray<Connectors.Connector> | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Settings {
  readonly port: number
  readonly host: string
  /** Where `sessions.db` and the local key live. */
  readonly dataDir: string
  /** A SQLite file or a `postgres://` URL (default: `<dataDir>/sessions.db`). */
  readonly database?: string | undefined
  /** `key:tenant,key2:tenant2`; when empty, the local key of `<dataDir>/api-key`. */
  readonly apiKeys?: string | undefined
  /** The key answer links are signed with (at least 32 characters); when empty, `<dataDir>/link-secret`'s. */
  readonly linkSecret?: string | undefined
  /** Where answer links point (`https://parley.example.com`); default: the origin of the request that made them. */
  readonly publicUrl?: string | undefined
  readonly logFormat: LogFormat
  /** What is logged (default `warn`: warnings and errors; `info` adds a line per request). */
  readonly logLevel?: LogLevel | undefined
  /**
   * Whether a client may start a session of an agent definition of its own (default `false`: only the served agents,
   * whose policies a client can only narrow).
   */
  readonly acceptDefinitions?: boolean | undefined
  /**
   * `host:port`: the server is a runner of the cluster of its PostgreSQL `database` (`@parley/cluster`), listening
   * there for the other runners; every server of the cluster serves every session.
   */
  readonly cluster?: string | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export type LogFormat = "logfmt" | "json" | "pretty"

/**
 * The levels a server logs at, from the quietest: `error`, `warn` (the default: what a person needs), `info` (a line
 * per request), `debug`.
 *
 * @since 0.1.0
 * @category Models
 */
export const logLevels = ["error", "warn", "info", "debug"] as const

/**
 * @since 0.1.0
 * @category Models
 */
export type LogLevel = typeof logLevels[number]

const isLogLevel = (value: string | undefined): value is LogLevel => logLevels.some((level) => level === value)

/**
 * The settings of the environment (see the module's table), `dataDir` defaulting to `defaultDataDir`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const settingsFromEnv = (
  env: { readonly [name: string]: string | undefined },
  defaultDataDir: string
): Settings => ({
  port: Number(env.PARLEY_PORT ?? 8787),
  host: env.PARLEY_HOST ?? "127.0.0.1",
  dataDir: env.PARLEY_DATA_DIR ?? defaultDataDir,
  database: nonEmpty(env.PARLEY_DATABASE_URL),
  apiKeys: nonEmpty(env.PARLEY_API_KEYS),
  linkSecret: nonEmpty(env.PARLEY_LINK_SECRET),
  publicUrl: nonEmpty(env.PARLEY_PUBLIC_URL),
  logFormat: env.PARLEY_LOG_FORMAT === "json" ? "json" : env.PARLEY_LOG_FORMAT === "pretty" ? "pretty" : "logfmt",
  logLevel: logLevelOf(env.PARLEY_LOG_LEVEL),
  acceptDefinitions: env.PARLEY_ACCEPT_DEFINITIONS?.trim().toLowerCase() === "true",
  cluster: nonEmpty(env.PARLEY_CLUSTER_RUNNER)
})

/**
 * A runner address, `host:port` (the `cluster` setting), or `undefined` when it is not one.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const parseRunner = (text: string): { readonly host: string; readonly port: number } | undefined => {
  const match = /^([^:\s]+):(\d{1,5})$/.exec(text.trim())
  const port = match === null ? NaN : Number(match[2])
  return match === null || port < 1 || port > 65535 ? undefined : { host: match[1], port }
}

/** `PARLEY_LOG_LEVEL`, in any case (`INFO`); `warn` when unset or not a level. */
const logLevelOf = (value: string | undefined): LogLevel => {
  const level = value?.trim().toLowerCase()
  return isLogLevel(level) ? level : "warn"
}

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value)

/**
 * Whether a database setting names PostgreSQL (rather than a SQLite file).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isPostgres = (database: string): boolean => /^postgres(ql)?:\/\//.test(database)

/**
 * The local key of a data folder, `<dataDir>/api-key`: created (mode 0600) when missing.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const localKey = (dataDir: string): Effect.Effect<{ readonly key: string; readonly file: string }> =>
  Effect.sync(() => {
    fs.mkdirSync(dataDir, { recursive: true })
    const file = path.join(dataDir, "api-key")
    if (!fs.existsSync(file)) {
      fs.writeFileSync(file, `parley_${crypto.randomBytes(24).toString("base64url")}\n`, { mode: 0o600 })
    }
    return { key: fs.readFileSync(file, "utf8").trim(), file }
  })

/**
 * The answer links' signing key of a data folder, `<dataDir>/link-secret`: created (mode 0600) when missing, so the
 * links a server made still open after it restarts.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const localLinkSecret = (dataDir: string): Effect.Effect<string> =>
  Effect.sync(() => {
    fs.mkdirSync(dataDir, { recursive: true })
    const file = path.join(dataDir, "link-secret")
    if (!fs.existsSync(file)) {
      fs.writeFileSync(file, `${crypto.randomBytes(32).toString("base64url")}\n`, { mode: 0o600 })
    }
    return fs.readFileSync(file, "utf8").trim()
  })

/** Whether the agents run on their real models: `MISTRAL_API_KEY` is set. */
const isLive = () => (process.env.MISTRAL_API_KEY ?? "") !== ""

/**
 * The server of the settings, serving `demo`'s agents, announced on stdout once it listens; it serves until its
 * scope closes (`Layer.launch` under `NodeRuntime.runMain`: until Ctrl-C).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  settings: Settings,
  demo: Demo
): Layer.Layer<never, ParleyServer.StartError | SocketServer.SocketServerError> =>
  Layer.unwrap(Effect.gen(function*() {
    const given = settings.apiKeys
    const local = given === undefined ? yield* localKey(settings.dataDir) : undefined
    const keys = ParleyServer.parseKeys(local !== undefined ? `${local.key}:local` : given ?? "")
    const live = isLive()
    const models = live
      ? yield* MistralModels.fromConfig().pipe(Effect.provide(FetchHttpClient.layer))
      : yield* demo.models
    const options: ParleyServer.RuntimeOptions = {
      keys,
      models,
      agents: demo.agents,
      acceptDefinitions: settings.acceptDefinitions ?? false,
      connectors: demo.connectors ?? [Connectors.demoMailbox()],
      links: {
        secret: Redacted.make(settings.linkSecret ?? (yield* localLinkSecret(settings.dataDir))),
        baseUrl: settings.publicUrl
      },
      port: settings.port,
      host: settings.host
    }
    const database = settings.database ?? path.join(settings.dataDir, "sessions.db")
    const postgres = isPostgres(database)
    const runner = settings.cluster === undefined ? undefined : parseRunner(settings.cluster)
    if (settings.cluster !== undefined && (runner === undefined || !postgres)) {
      return yield* Effect.fail(
        new Config.ConfigError(
          new Schema.SchemaError(
            new SchemaIssue.Pointer(
              ["cluster"],
              new SchemaIssue.InvalidValue({
                message: "a cluster runner needs host:port and a postgres:// database"
              })
            )
          )
        )
      )
    }
    const server = runner !== undefined
      ? Layer.unwrap(
        // The cluster's modules load only for a runner.
        Effect.map(
          Effect.promise(() => import("@parley/cluster/ClusterServer")),
          (ClusterServer) => ClusterServer.layerPg({ ...options, url: database, runner })
        )
      )
      : postgres
      ? ParleyServer.layerPg({ ...options, url: database })
      : Layer.unwrap(Effect.sync(() => {
        fs.mkdirSync(path.dirname(path.resolve(database)), { recursive: true })
        return ParleyServer.layerSqlite({ ...options, filename: database })
      }))
    const announce = Layer.effectDiscard(Effect.gen(function*() {
      const http = yield* HttpServer.HttpServer
      const url = http.address._tag === "UnixPathAddress" ? "?" : `http://${settings.host}:${http.address.port}`
      yield* Console.log(
        `Parley server on ${url} (${postgres ? "PostgreSQL" : database})${
          runner === undefined ? "" : `, a cluster runner at ${runner.host}:${runner.port}`
        }`
      )
      yield* Console.log(
        `  models: ${live ? "MISTRAL_API_KEY is set: the agents' real models" : "the guides' scripted brains"}`
      )
      yield* Console.log(`  session app: ${url}/${local === undefined ? "" : `#key=${local.key}`}`)
      yield* Console.log(`  API reference: ${url}/docs (OpenAPI: ${url}/openapi.json)`)
      if (local !== undefined) yield* Console.log(`  API key (kept in ${local.file}): ${local.key}`)
      else yield* Console.log(`  API keys: ${keys.length} from PARLEY_API_KEYS`)
      yield* Console.log(`  what waits for an answer: npx parley callbacks list`)
      yield* Console.log(`  logs: ${logged[settings.logLevel ?? "warn"]}`)
    }))
    return announce.pipe(Layer.provide(server))
  }))

/** What the banner says of the log, at each level. */
const logged: Record<LogLevel, string> = {
  error: "errors only (PARLEY_LOG_LEVEL=info: a line per request)",
  warn: "warnings and errors only (PARLEY_LOG_LEVEL=info: a line per request)",
  info: "a line per request, warnings and errors",
  debug: "everything, down to debug"
}

const minimumLevels: Record<LogLevel, EffectLogLevel.LogLevel> = {
  error: "Error",
  warn: "Warn",
  info: "Info",
  debug: "Debug"
}

/**
 * Runs the server of `layer` until interrupted (Ctrl-C under `NodeRuntime.runMain`), logging at the settings' level
 * (default `warn`) in their format.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const launch = (
  settings: Settings,
  demo: Demo
): Effect.Effect<never, ParleyServer.StartError | SocketServer.SocketServerError> =>
  Layer.launch(layer(settings, demo)).pipe(
    Effect.provide(logger(settings.logFormat)),
    Effect.provideService(References.MinimumLogLevel, minimumLevels[settings.logLevel ?? "warn"])
  )

/**
 * The request log's format.
 *
 * @since 0.1.0
 * @category Layers
 */
export const logger = (format: LogFormat): Layer.Layer<never> =>
  Logger.layer([
    format === "json" ? Logger.consoleJson : format === "pretty" ? Logger.consolePretty() : Logger.consoleLogFmt
  ])
