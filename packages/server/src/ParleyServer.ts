/**
 * The Parley session server: `@parley/core`'s `ProtocolApi` implemented over the engine (`Transport`) with
 * `HttpApiBuilder`, served by an `HttpServer` (`@effect/platform-node`'s in `layerSqlite` / `layerPg`). It serves
 * the OpenAPI document at `/openapi.json` and a Scalar page at `/docs`.
 *
 * - **Keys and tenants**: every API route needs `Authorization: Bearer <key>`; each key belongs to a tenant, which
 *   sees only its own sessions (another tenant's id answers 404 exactly like an unknown one). Keys are compared in
 *   constant time and never logged.
 * - **Limits**: request bodies over `maxBodyBytes` → 413 before they are read; at most `maxStreamsPerKey` event
 *   streams per key (429); user messages up to `maxMessageLength` characters (413). A refused request changes no log.
 * - **Logs**: one structured line per request (method, route, status, ms, tenant, key id); never keys, bodies or
 *   query strings. Pick the format at the edge (`Logger.json`, `Logger.logFmt`).
 * - **Shutdown**: when the layer's scope closes the event streams end first (clients resume by cursor), then the
 *   engine lets its appends finish and releases its leases; open callbacks stay open in the store.
 *
 * @example
 * ```ts
 * import { ParleyServer } from "@parley/server"
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Layer, Redacted } from "effect"
 *
 * ParleyServer.layerSqlite({
 *   filename: ".parley/sessions.db",
 *   port: 8787,
 *   keys: [{ key: Redacted.make("dev-key"), tenant: "me" }]
 * }).pipe(Layer.launch, NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { TransportFailure } from "@parley/core/ParleyError"
import { ProtocolApi } from "@parley/core/ProtocolApi"
import { Transport } from "@parley/core/Transport"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Access from "./internal/access.js"
import * as Auth from "./internal/auth.js"
import * as Handlers from "./internal/handlers.js"
import * as RequestLog from "./internal/requestLog.js"
import * as Sessions from "./internal/sessions.js"
import * as Sse from "./internal/sse.js"

/**
 * An API key and the tenant it belongs to.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ApiKey {
  readonly key: Redacted.Redacted<string>
  readonly tenant: string
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** The API keys the server accepts, each with its tenant. */
  readonly keys: ReadonlyArray<ApiKey>
  /** Request bodies larger than this are refused with 413 (default 1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** Event streams one key may hold open at once (default 1,000). */
  readonly maxStreamsPerKey?: number | undefined
  /** The longest user message accepted, in characters (default 100,000). */
  readonly maxMessageLength?: number | undefined
  /** How often an idle event stream gets a comment line (default 15 seconds). */
  readonly heartbeat?: Duration.DurationInput | undefined
  /** One log line per request (default `true`). */
  readonly log?: boolean | undefined
}

/**
 * Which tenant owns which session: the server's table next to the store's. `layerSessionsSql` keeps it on the
 * `SqlClient` in context (the store's database); `layerSessionsMemory` in memory (with an in-memory store).
 *
 * @since 0.1.0
 * @category Context
 */
export const SessionTenants: typeof Sessions.SessionTenants = Sessions.SessionTenants

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerSessionsMemory: Layer.Layer<Sessions.SessionTenants> = Sessions.layerMemory

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerSessionsSql: Layer.Layer<
  Sessions.SessionTenants,
  TransportFailure,
  SqlClient.SqlClient
> = Sessions.layerSql

/**
 * Parses `key:tenant,key2:tenant2` (the format of `PARLEY_API_KEYS`); a key without `:tenant` belongs to `default`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const parseKeys: (text: string) => ReadonlyArray<ApiKey> = Auth.parseKeys

const apiLayer = (options: Options) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const transport = yield* Transport
    const tenants = yield* Sessions.SessionTenants
    const access = Access.make(transport, tenants)
    const shutdown = yield* Deferred.make<void>()
    // Runs before the HTTP server closes: the streams end, so the server does not wait on them.
    yield* Effect.addFinalizer(() => Deferred.succeed(shutdown, undefined))
    const groups = Layer.mergeAll(
      Handlers.sessions(transport, tenants, access),
      Handlers.turns(transport, access, { maxMessageLength: options.maxMessageLength ?? 100_000 }),
      Handlers.callbacks(transport, access),
      Sse.events(transport, access, {
        maxStreams: options.maxStreamsPerKey ?? 1_000,
        heartbeat: Duration.decode(options.heartbeat ?? "15 seconds"),
        shutdown
      })
    )
    return HttpApiBuilder.api(ProtocolApi).pipe(Layer.provide(groups), Layer.provide(Auth.layer(options.keys)))
  }))

/**
 * The server over the `Transport` (the engine: `LocalTransport.layer` of `@parley/runtime`), the `SessionTenants`
 * and the `HttpServer` in context (with its platform services: `NodeHttpServer.layer` provides both).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  options: Options
): Layer.Layer<
  never,
  never,
  Transport | Sessions.SessionTenants | HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices
> =>
  HttpApiBuilder.serve(
    RequestLog.middleware({ maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024, log: options.log ?? true })
  ).pipe(
    Layer.provide(HttpApiBuilder.middlewareOpenApi()),
    Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
    Layer.provide(
      HttpApiBuilder.Router.use((router) =>
        router.get("/", Effect.succeed(HttpServerResponse.redirect("/docs", { status: 302 })))
      )
    ),
    Layer.provide(apiLayer(options))
  )
