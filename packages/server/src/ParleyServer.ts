/**
 * The Parley session server: `@parley/core`'s `ProtocolApi` implemented over the engine (`Transport`) with
 * `HttpApiBuilder`, served by an `HttpServer` (`@effect/platform-node`'s in `layerSqlite` / `layerPg`). It serves
 * the session app at `/` (a page to start sessions of the server's `agents`, watch their turns and answer their
 * callbacks), the OpenAPI document at `/openapi.json` and a Scalar page at `/docs`.
 *
 * - **Agents**: the server owns the agents it serves (`agents`): a client starts a session of one by name, and can
 *   only narrow its policy (its `permissions` bound the server's: ask or refuse more, never less). A definition the
 *   server does not serve is refused (`AgentInvalid`) unless `acceptDefinitions` is on; `policyFloor` bounds every
 *   policy either way.
 * - **Keys and tenants**: every API route needs `Authorization: Bearer <key>`; each key belongs to a tenant, which
 *   sees only its own sessions (another tenant's id answers 404 exactly like an unknown one). Keys are compared in
 *   constant time and never logged.
 * - **Limits**: request bodies over `maxBodyBytes` → 413 before they are read (a chunked one as it outgrows it);
 *   bodies of another media type than JSON → 415; JSON nested deeper than `maxJsonDepth` → 400 before any decoding;
 *   at most `maxStreamsPerKey` event streams, `maxRequestsPerKey` requests in flight and `maxSessionsPerMinute`
 *   session starts per key (429 with `Retry-After`); user messages up to `maxMessageLength` characters (413); the
 *   servers of `layerSqlite` / `layerPg` hold connections to `deadlines` (408). A refused request changes no log.
 * - **Incidents**: a defect answers a 500 `InternalError` and a failure of the engine a 503 `TransportFailure` without
 *   its cause; each names an incident id, under which the server logs the cause.
 * - **Webhooks** (`webhooks`): each tenant's endpoints are POSTed its sessions' `callback.opened`, `callback.resolved`
 *   and `turn.ended` from the store's outbox (written with the events: at least once, in order per tree, retried),
 *   signed as `Webhook` of `@parley/core` describes; `GET /webhooks/deliveries` is the delivery log,
 *   `POST /webhooks/deliveries/redeliver` sends an event again.
 * - **Answer links** (`links`): signed, single-use, expiring URLs that answer a callback without a key — `allow` /
 *   `deny` for an approval, a form for a client tool's result or a sign-in (`AnswerLink` of `@parley/core`): made
 *   through the API and carried by a callback's webhook; `/l/<id>.<signature>` confirms on a page, a GET never
 *   answers.
 * - **Logs**: one structured line per request (method, route, status, ms, tenant, key id); never keys, bodies or
 *   query strings. Pick the format at the edge (`Logger.json`, `Logger.logFmt`).
 * - **Shutdown**: when the layer's scope closes the event streams end (clients resume by cursor), every new request
 *   is answered 503 (`TransportFailure`, the connection closed: `HttpTransport` tries again) and a long-poll answers
 *   the turn as it stands; on `layerHttpServer` (`layerSqlite`, `layerPg`) the requests in flight get at most
 *   `shutdownTimeout` (default 5 s) to finish, the server still answering, then every connection is closed. Then the
 *   engine lets its appends finish and releases its leases; open callbacks stay open in the store.
 *
 * @example
 * ```ts
 * import { Models } from "@parley/runtime"
 * import { ParleyServer } from "@parley/server"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * // every agent on one scripted model; `Layer.launch(Server)` runs it (under `NodeRuntime.runMain`)
 * const Server = Layer.unwrap(
 *   Effect.map(ScriptedModel.fromFunction(() => ScriptedModel.text("Hello!")), (scripted) =>
 *     ParleyServer.layerSqlite({
 *       filename: ".parley/sessions.db",
 *       port: 8787,
 *       keys: [{ key: Redacted.make("dev-key"), tenant: "me" }],
 *       models: Models.single(scripted.languageModel)
 *     }))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as PgClient from "@effect/sql-pg/PgClient"
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { TransportFailure } from "@parley/core/ParleyError"
import type { PermissionPolicy } from "@parley/core/Permissions"
import { type Authorization, DecodeErrors, ProtocolApi } from "@parley/core/ProtocolApi"
import { Transport } from "@parley/core/Transport"
import type * as Webhook from "@parley/core/Webhook"
import * as Outbox from "@parley/log/Outbox"
import type * as SessionStore from "@parley/log/SessionStore"
import * as Connectors from "@parley/runtime/Connectors"
import type * as Engine from "@parley/runtime/Engine"
import * as LocalTransport from "@parley/runtime/LocalTransport"
import * as Models from "@parley/runtime/Models"
import * as RuntimeTools from "@parley/runtime/RuntimeTools"
import * as SqliteClient from "@parley/store-sql/SqliteClient"
import * as SqlStore from "@parley/store-sql/SqlStore"
import type * as Config from "effect/Config"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiScalar from "effect/http-api/HttpApiScalar"
import type * as Etag from "effect/http/Etag"
import type * as HttpPlatform from "effect/http/HttpPlatform"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import type * as HttpServerError from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Redacted from "effect/Redacted"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as Access from "./internal/access.js"
import * as AgUi from "./internal/agUi.js"
import * as AiSdk from "./internal/aiSdk.js"
import * as AnswerLinks from "./internal/answerLinks.js"
import * as Auth from "./internal/auth.js"
import * as DrainingServer from "./internal/drainingServer.js"
import * as Handlers from "./internal/handlers.js"
import * as Incidents from "./internal/incidents.js"
import * as RequestLog from "./internal/requestLog.js"
import * as Served from "./internal/served.js"
import * as Sessions from "./internal/sessions.js"
import * as Sse from "./internal/sse.js"
import * as WebApp from "./internal/webApp.js"
import * as Deliveries from "./internal/webhooks.js"

/**
 * An API key, the tenant it belongs to and its roles: an approval whose rule names `approvers` takes answers from a
 * key holding one of their roles (or named by its id, `key_…`); any other key's answer is a 403 `NotAllowedToAnswer`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ApiKey {
  readonly key: Redacted.Redacted<string>
  readonly tenant: string
  readonly roles?: ReadonlyArray<string> | undefined
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
  /**
   * How deep a request's JSON body may nest (default 64 levels: `{"a":{"b":1}}` nests two): a deeper one is refused
   * with a 400 `HttpApiDecodeError` naming where, before any decoding.
   */
  readonly maxJsonDepth?: number | undefined
  /** Event streams one key may hold open at once (default 1,000). */
  readonly maxStreamsPerKey?: number | undefined
  /**
   * Requests one key may have in flight at once, event streams aside (default 256: a long poll counts while it
   * waits); one more is refused with 429 `TooManyRequests` and `Retry-After: 1`.
   */
  readonly maxRequestsPerKey?: number | undefined
  /**
   * Sessions one key may start in any minute (default 600); one more is refused with 429 `TooManyRequests` and a
   * `Retry-After` of the seconds until a start leaves the window.
   */
  readonly maxSessionsPerMinute?: number | undefined
  /** The longest user message accepted, in characters (default 100,000). */
  readonly maxMessageLength?: number | undefined
  /** How often an idle event stream gets a comment line (default 15 seconds). */
  readonly heartbeat?: Duration.Input | undefined
  /** One log line per request (default `true`). */
  readonly log?: boolean | undefined
  /**
   * The agents the server serves (`GET /agents` lists them; default: none). A session of one runs the server's
   * definition, whatever else the client posts with its name; the client's `permissions` can only narrow its policy.
   */
  readonly agents?: ReadonlyArray<AgentSpec> | undefined
  /**
   * Whether a tenant may start a session of a definition of its own, one the server does not serve (default `false`:
   * such a `POST /sessions` is refused with `AgentInvalid`, naming the served agents).
   */
  readonly acceptDefinitions?: boolean | undefined
  /**
   * A policy no session's agent may widen (default: none): every policy of every tree, served or accepted, is bounded
   * by it (`PermissionPolicy.bounded(…, "server", floor)`: each call's decision is the strictest of the two).
   */
  readonly policyFloor?: PermissionPolicy | undefined
  /**
   * Webhooks (default: none): the tenants' endpoints, each POSTed the `callback.opened`, `callback.resolved` and
   * `turn.ended` of its tenant's sessions, signed (`Webhook` of `@parley/core`), from the store's outbox (written with
   * the events: at least once, in order per tree, retried on a backoff). `GET /webhooks/deliveries` is the delivery log,
   * `POST /webhooks/deliveries/redeliver` sends a past event again.
   */
  readonly webhooks?: Webhooks | undefined
  /**
   * Answer links (default: none; `POST …/callbacks/:callbackId/links` then answers 501 `AnswerLinksOff`): signed,
   * single-use, expiring URLs that answer one callback without an API key — `secret` signs them (keep it as secret as
   * the keys), `baseUrl` is where they point (default: the origin of the request that made them), `ttl` how long
   * they live (default 24 hours, at most 30 days). A webhook's `callback.opened` carries the callback's links (on
   * `baseUrl`, else the server's own address). See `docs/guides/answer-links.md`.
   */
  readonly links?: AnswerLinks.Options | undefined
}

/**
 * A webhook endpoint of a tenant.
 *
 * @since 0.1.0
 * @category Models
 */
export interface WebhookEndpoint {
  /** Names the endpoint in the delivery log; keep it stable across restarts (default: its `url`). */
  readonly id?: string | undefined
  /** The tenant whose sessions' events it gets. */
  readonly tenant: string
  readonly url: string
  /** The secret it signs with, or several while rotating (each request then carries one signature per secret). */
  readonly secret: Redacted.Redacted<string> | string | ReadonlyArray<Redacted.Redacted<string> | string>
  /** The kinds it takes (default: all three). */
  readonly events?: ReadonlyArray<Webhook.Kind> | undefined
}

/**
 * The server's webhooks: its endpoints and how it delivers to them.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Webhooks {
  readonly endpoints: ReadonlyArray<WebhookEndpoint>
  /** How long one request may take before it counts as failed (default 10 seconds). */
  readonly timeout?: Duration.Input | undefined
  /** How often the outbox is looked at while there is nothing to do (default 200 ms). */
  readonly poll?: Duration.Input | undefined
  /** The first retry's delay (default 1 second), doubled after each failure up to `maxBackoff`. */
  readonly backoff?: Duration.Input | undefined
  /** The longest delay between two attempts (default 5 minutes). */
  readonly maxBackoff?: Duration.Input | undefined
  /** Requests in flight at once, across endpoints (default 32). */
  readonly concurrency?: number | undefined
}

/**
 * Routes served with the protocol's: `api` is `ProtocolApi` with more groups (`ProtocolApi.add(...)`, each group with
 * the `Authorization` middleware), `groups` their handlers (`HttpApiBuilder.group(api, …)`; the server gives them the
 * `Authorization`, the rest they need is the server layer's). The protocol's own handlers stay the server's.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Extension<E = never, R = never> {
  readonly api: HttpApi.Constraint
  readonly groups: Layer.Layer<never, E, R | Authorization>
}

/**
 * The server's options with an `Extension`: more routes, behind the same keys (`ClusterServer`'s
 * `GET /cluster/status`; default: none).
 *
 * @since 0.1.0
 * @category Models
 */
export interface WithExtension<E = never, R = never> {
  readonly extension?: Extension<E, R> | undefined
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
 * The server's answer links (see `Options.links`): its table next to the sessions' (`parley_server_links`).
 *
 * @since 0.1.0
 * @category Context
 */
export const AnswerLinksTable: typeof AnswerLinks.AnswerLinks = AnswerLinks.AnswerLinks

/**
 * The server's own tables in memory: which tenant owns which session, and the answer links.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSessionsMemory: Layer.Layer<Sessions.SessionTenants | AnswerLinks.AnswerLinks> = Layer.merge(
  Sessions.layerMemory,
  AnswerLinks.layerMemory
)

/**
 * The server's own tables on the `SqlClient` in context (the store's database): which tenant owns which session, and
 * the answer links.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSessionsSql: Layer.Layer<
  Sessions.SessionTenants | AnswerLinks.AnswerLinks,
  TransportFailure,
  SqlClient.SqlClient
> = Layer.merge(Sessions.layerSql, AnswerLinks.layerSql)

/**
 * Parses `key:tenant,key2:tenant2#finance+oncall` (the format of `PARLEY_API_KEYS`); a key without `:tenant` belongs
 * to `default`; `#role+role` after the tenant gives the key its roles (what a rule's `approvers` checks).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const parseKeys: (text: string) => ReadonlyArray<ApiKey> = Auth.parseKeys

/** The protocol (or an extension's API) with the server's own routes: the front-ends' and the answer links'. */
const withFrontEnds = (api: HttpApi.Constraint) => (api as typeof ProtocolApi).add(AiSdk.AiSdkGroup, AgUi.AgUiGroup)

const apiLayer = <E, R>(options: Options & WithExtension<E, R>, shutdown: Deferred.Deferred<void>) =>
  Layer.unwrap(Effect.gen(function*() {
    const transport = Served.make(yield* Transport)
    const tenants = yield* Sessions.SessionTenants
    const links = yield* AnswerLinks.AnswerLinks
    const access = Access.make(transport, tenants)
    const runtimeTools = yield* Effect.serviceOption(RuntimeTools.RuntimeTools)
    const outbox = yield* Effect.serviceOption(Outbox.Outbox)
    const frontEnds = {
      maxMessageLength: options.maxMessageLength ?? 100_000,
      maxStreams: options.maxStreamsPerKey ?? 1_000,
      shutdown
    }
    const groups = Layer.mergeAll(
      Handlers.sessions(transport, tenants, access, runtimeTools, {
        served: options.agents ?? [],
        acceptDefinitions: options.acceptDefinitions ?? false,
        policyFloor: options.policyFloor
      }),
      Handlers.turns(
        transport,
        access,
        { maxMessageLength: options.maxMessageLength ?? 100_000 },
        Deferred.await(shutdown)
      ),
      Handlers.callbacks(transport, access),
      Handlers.agents(options.agents ?? []),
      Deliveries.group(outbox),
      AnswerLinks.group(transport, access, links, options.links),
      Sse.events(transport, access, {
        maxStreams: options.maxStreamsPerKey ?? 1_000,
        heartbeat: Duration.fromInputUnsafe(options.heartbeat ?? "15 seconds"),
        shutdown
      }),
      // The front-ends' protocols: the AI SDK's UI message stream (useChat) and AG-UI.
      AiSdk.group(transport, access, frontEnds),
      AgUi.group(transport, access, frontEnds)
    )
    // An extension's API is `ProtocolApi` with more groups: it is served as the protocol, its groups' handlers given.
    const api = withFrontEnds(options.extension?.api ?? ProtocolApi)
    const extension: Layer.Layer<never, E, R | Authorization> = options.extension?.groups ?? Layer.empty
    return HttpApiBuilder.layer(api, { openapiPath: "/openapi.json" }).pipe(
      Layer.provide(Layer.merge(groups, extension)),
      Layer.provide([
        Auth.layer(options.keys, {
          maxRequests: options.maxRequestsPerKey ?? 256,
          sessionsPerMinute: options.maxSessionsPerMinute ?? 600
        }),
        DecodeErrors.layer,
        Incidents.layer,
        Access.layerSessionFirst(access)
      ])
    )
  }))

/**
 * The webhooks' deliverer, when the server has endpoints: over the store's outbox (in context: the all-in-one layers
 * give it the engine's store).
 */
const deliverer = (
  options: Options
): Layer.Layer<never, never, Sessions.SessionTenants | AnswerLinks.AnswerLinks | HttpServer.HttpServer> =>
  options.webhooks === undefined || options.webhooks.endpoints.length === 0
    ? Layer.empty
    : Layer.effectDiscard(Effect.gen(function*() {
      const outbox = yield* Effect.serviceOption(Outbox.Outbox)
      if (Option.isNone(outbox)) {
        return yield* Effect.die(
          new Error("ParleyServer: webhooks need the store's Outbox in context (provide the store to the server too)")
        )
      }
      // A callback's links point at the server's public URL (`links.baseUrl`), else at its port on this machine.
      const address = (yield* HttpServer.HttpServer).address
      const origin = address._tag === "UnixPathAddress" ? "http://localhost" : `http://127.0.0.1:${address.port}`
      const table = yield* AnswerLinks.AnswerLinks
      const links = options.links
      yield* Deliveries.start(
        outbox.value,
        yield* Sessions.SessionTenants,
        options.webhooks!,
        links === undefined ? undefined : {
          make: (tenant, callback, root) => AnswerLinks.forCallback(table, links, tenant, callback, root, origin)
        }
      )
    }))

/**
 * What serving files and the OpenAPI document needs from the platform (`NodeHttpServer.layer` provides it).
 *
 * @since 0.1.0
 * @category Models
 */
export type PlatformServices = Etag.Generator | FileSystem.FileSystem | HttpPlatform.HttpPlatform | Path.Path

/**
 * The server over the `Transport` (the engine: `LocalTransport.layer` of `@parley/runtime`), the `SessionTenants`
 * and the `HttpServer` in context (with its platform services: `NodeHttpServer.layer` provides both). Given the
 * engine's `RuntimeTools` too, it refuses (`AgentInvalid`, 400) a definition that marks a tool `runsIn: "runtime"`
 * without a handler here (`layerSqlite` and `layerPg` do this).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = <E = never, R = never>(
  options: Options & WithExtension<E, R>
): Layer.Layer<
  never,
  E,
  Transport | Sessions.SessionTenants | AnswerLinks.AnswerLinks | HttpServer.HttpServer | PlatformServices | R
> =>
  Layer.unwrap(Effect.gen(function*() {
    const shutdown = yield* Deferred.make<void>()
    // Built after the HTTP server, so its finalizer runs before the server's close (which waits for every open
    // connection): the streams end and new requests are refused (503, the connection closed), so the server does
    // not wait on clients that reconnect.
    const stopping = Layer.effectDiscard(Effect.addFinalizer(() => Deferred.succeed(shutdown, undefined)))
    const app = WebApp.responses(yield* WebApp.assets)
    const sessionApp = HttpRouter.use((router) =>
      Effect.all([
        router.add("GET", "/", app.html),
        router.add("GET", "/app/app.js", app.js),
        router.add("GET", "/app/app.css", app.css)
      ])
    )
    const linkPages = AnswerLinks.pages(Served.make(yield* Transport), yield* AnswerLinks.AnswerLinks, options.links)
    const api = withFrontEnds(options.extension?.api ?? ProtocolApi)
    return HttpRouter.serve(
      Layer.mergeAll(
        apiLayer(options, shutdown),
        HttpApiScalar.layer(api, { path: "/docs" }),
        sessionApp,
        linkPages,
        deliverer(options),
        RequestLog.layer({
          maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
          maxJsonDepth: options.maxJsonDepth ?? 64,
          log: options.log ?? true,
          stopping: Deferred.isDone(shutdown)
        })
      ),
      { disableLogger: true, disableListenLog: true }
    ).pipe((served) => Layer.provide(stopping, served)) as Layer.Layer<
      never,
      E,
      // An extension's generic `E` and `R` come back through `HttpRouter`'s request markers, which TypeScript
      // cannot simplify for a type parameter: the same types, spelled plainly.
      Transport | Sessions.SessionTenants | AnswerLinks.AnswerLinks | HttpServer.HttpServer | PlatformServices | R
    >
  }))

/**
 * What the all-in-one layers (`layerSqlite`, `layerPg`) run: the engine's models, connectors, runtime tools and
 * options, and where to listen.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RuntimeOptions extends Options {
  /** Resolves each agent's model (`Models.single`, `Models.byName`, the Mistral resolver, …). */
  readonly models: Models.Service
  /** The connectors agents can sign in to (default: none). */
  readonly connectors?: ReadonlyArray<Connectors.Connector> | undefined
  /** The tools the runtime runs itself (default: none). */
  readonly tools?: ReadonlyArray<RuntimeTools.Entry> | undefined
  /** The engine's options (`Engine.Options`). */
  readonly engine?: Engine.Options | undefined
  /** The port (default 8787; 0 picks a free one). */
  readonly port?: number | undefined
  /** The host (default `127.0.0.1`). */
  readonly host?: string | undefined
  /** How long a client may take over a request, and keep a connection idle (`Deadlines`). */
  readonly deadlines?: Deadlines | undefined
  /**
   * How long a stopping server lets the requests in flight finish (default 5 seconds; see `layerHttpServer`). It
   * answers every request that comes meanwhile with 503 (`TransportFailure`, the connection closed) and its event
   * streams end at once; then it closes every connection left. A stop takes at most this (and a quarter of a second),
   * then the engine's own stop.
   */
  readonly shutdownTimeout?: Duration.Input | undefined
}

/**
 * The deadlines of a connection, for clients that hold one without using it: a request whose headers, or whole
 * body, take longer is answered 408 and its connection closed; a kept-alive connection idle longer is closed. A
 * response takes as long as it takes (an event stream, a long poll).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Deadlines {
  /** Until a request's headers are in (default 10 seconds). */
  readonly headers?: Duration.Input | undefined
  /** Until a request is in, its body too (default 30 seconds; never shorter than `headers`). */
  readonly request?: Duration.Input | undefined
  /** How long a kept-alive connection may wait for its next request (default 5 seconds). */
  readonly idle?: Duration.Input | undefined
}

const millis = (input: Duration.Input | undefined, fallback: number) =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/** Node's HTTP server options for `deadlines`. */
const serverOptions = (deadlines: Deadlines | undefined) => {
  const headersTimeout = millis(deadlines?.headers, 10_000)
  const requestTimeout = Math.max(headersTimeout, millis(deadlines?.request, 30_000))
  return {
    headersTimeout,
    requestTimeout,
    keepAliveTimeout: millis(deadlines?.idle, 5_000),
    // How often Node looks for requests past their deadlines (its default, 30 s, would let one run that long over).
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeout / 4))
  }
}

/**
 * Why a server could not start: its store could not open (`StoreError`), its tenants' table could not be made
 * (`SqlError`, `ConfigError`), its tenants could not be set up (`TransportFailure`), or it could not listen
 * (`ServeError`: the port is taken, the host unknown).
 *
 * @since 0.1.0
 * @category Errors
 */
export type StartError =
  | SessionStore.StoreError
  | SqlError.SqlError
  | Config.ConfigError
  | TransportFailure
  | HttpServerError.ServeError

/**
 * Node's HTTP server on `host:port` (default `127.0.0.1:8787`), with the platform services the server needs, as the
 * all-in-one layers (`layerSqlite`, `layerPg`, `ClusterServer.layerPg`) run it. When it stops it drains: it goes on
 * listening, answering every new request with the server's 503 (`TransportFailure`, the connection closed), closes each
 * connection as soon as it is idle, and once no connection is left, or `shutdownTimeout` (default 5 s) has passed, it
 * stops listening and closes the connections left (a request that never ends, such as a body that never comes, is
 * cut). A stop of its HTTP side so takes at most `shutdownTimeout` and a quarter of a second. It holds connections to
 * `deadlines` (408 to a request slower than them).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerHttpServer = (options: {
  readonly port?: number | undefined
  readonly host?: string | undefined
  readonly shutdownTimeout?: Duration.Input | undefined
  readonly deadlines?: Deadlines | undefined
}): Layer.Layer<HttpServer.HttpServer | PlatformServices, HttpServerError.ServeError> =>
  Layer.unwrap(Effect.sync(() => {
    const timeout = Duration.fromInputUnsafe(options.shutdownTimeout ?? "5 seconds")
    return NodeHttpServer.layer(() => DrainingServer.make(timeout, serverOptions(options.deadlines)), {
      port: options.port ?? 8787,
      host: options.host ?? "127.0.0.1",
      // Once `timeout` has passed, the requests still running are interrupted; a moment later the connections left
      // are closed.
      gracefulShutdownTimeout: timeout
    })
  }))

const serverOn = (
  options: RuntimeOptions,
  store: Layer.Layer<SessionStore.SessionStore, SessionStore.StoreError>,
  sql: Layer.Layer<SqlClient.SqlClient, SqlError.SqlError | Config.ConfigError>
): Layer.Layer<HttpServer.HttpServer, StartError> => {
  const runtimeTools = RuntimeTools.layer(...(options.tools ?? []))
  const engine = (options.engine === undefined ? LocalTransport.layer : LocalTransport.layerWith(options.engine)).pipe(
    Layer.provide([store, Connectors.layer(options.connectors ?? []), runtimeTools, Models.layer(options.models)])
  )
  return layer(options).pipe(
    // The API checks a client's definitions against the runtime tools the engine has.
    // The store too: the webhooks' deliverer and delivery log read its outbox (the same store as the engine's).
    Layer.provide([engine, runtimeTools, layerSessionsSql.pipe(Layer.provide(sql)), store]),
    Layer.provideMerge(layerHttpServer(options))
  )
}

/**
 * The whole server on a SQLite file: the engine over `SqlStore.layerSqlite`, the tenants' table next to it (`<file>.tenants`), on
 * Node's HTTP server. It provides the `HttpServer` (its `address` says where it listens).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqlite = (
  options: RuntimeOptions & { readonly filename: string }
): Layer.Layer<HttpServer.HttpServer, StartError> =>
  serverOn(
    options,
    SqlStore.layerSqlite({ filename: options.filename }),
    // A file of its own: a second writer on the store's file would contend for its lock.
    SqliteClient.layer({ filename: options.filename === ":memory:" ? ":memory:" : `${options.filename}.tenants` })
  )

/**
 * The whole server on PostgreSQL: several processes on one database serve one session set (an answer accepted by
 * any of them resumes the turn wherever it runs).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerPg = (
  options: RuntimeOptions & { readonly url: string | Redacted.Redacted }
): Layer.Layer<HttpServer.HttpServer, StartError> => {
  const url = typeof options.url === "string" ? Redacted.make(options.url) : options.url
  return serverOn(options, SqlStore.layerPg({ url, maxConnections: 10 }), PgClient.layer({ url, maxConnections: 2 }))
}
