/**
 * Parley's session server (`@parley/server`'s `ParleyServer.layer`, unchanged) as a runner of a cluster on
 * PostgreSQL: the engine's place is taken by `ClusterRuntime.layerSocket`, so every server of the cluster serves every
 * session — an answer accepted by any of them reaches the runner that holds the tree. Each also serves
 * `GET /cluster/status` (`ClusterApi`: the runners, their shards, its trees). What `parley serve --cluster` runs.
 *
 * @example
 * ```ts
 * import { ClusterServer } from "@parley/cluster"
 * import type { Models } from "@parley/runtime"
 * import { ParleyServer } from "@parley/server"
 *
 * // Two servers of one cluster: each listens for HTTP and, at its runner address, for the other runners.
 * const servers = (models: Models.Service) =>
 *   [8787, 8788].map((port, i) =>
 *     ClusterServer.layerPg({
 *       keys: ParleyServer.parseKeys("a-key-0123456789:acme"),
 *       models,
 *       url: "postgres://parley:parley@127.0.0.1:5432/parley",
 *       port,
 *       runner: { host: "127.0.0.1", port: 34431 + i }
 *     })
 *   )
 * ```
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Connectors from "@parley/runtime/Connectors"
import * as Models from "@parley/runtime/Models"
import * as RuntimeTools from "@parley/runtime/RuntimeTools"
import * as ParleyServer from "@parley/server/ParleyServer"
import * as SqlStore from "@parley/store-sql/SqlStore"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import type * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as SocketServer from "effect/socket/SocketServer"
import * as ClusterApi from "./ClusterApi.js"
import * as ClusterRuntime from "./ClusterRuntime.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options extends ParleyServer.RuntimeOptions {
  /** The PostgreSQL database of the sessions, the tenants and the cluster's runners. */
  readonly url: string | Redacted.Redacted
  /** Where this runner listens for the others (and where they reach it). */
  readonly runner: { readonly host: string; readonly port: number }
  /** The cluster's settings (the runner address aside); Parley's tests use the lock table (`shardLockDisableAdvisory`). */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
  /** How often the wake-up singleton looks for trees a dead runner left mid-turn (default: 5 seconds). */
  readonly wakeUpInterval?: ClusterRuntime.Options["wakeUpInterval"]
}

/**
 * The server as a runner of the cluster on `url`, on Node's HTTP server (`port`, default 8787; `host`, default
 * 127.0.0.1). It provides the `HttpServer` (its `address` says where it listens).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerPg = (
  options: Options
): Layer.Layer<HttpServer.HttpServer, ParleyServer.StartError | SocketServer.SocketServerError> => {
  const url = typeof options.url === "string" ? Redacted.make(options.url) : options.url
  const sql = PgClient.layer({ url, maxConnections: 4 })
  const runtimeTools = RuntimeTools.layer(...(options.tools ?? []))
  const runtime = ClusterRuntime.layerSocket({
    engine: options.engine,
    wakeUpInterval: options.wakeUpInterval,
    shardingConfig: {
      ...options.shardingConfig,
      runnerAddress: Option.some(RunnerAddress.make(options.runner.host, options.runner.port))
    }
  }).pipe(
    Layer.provide([
      SqlStore.layerPg({ url, maxConnections: 10 }),
      sql,
      Connectors.layer(options.connectors ?? []),
      runtimeTools,
      Models.layer(options.models)
    ])
  )
  const extension = { api: ClusterApi.Api, groups: ClusterApi.layer }
  return ParleyServer.layer({ ...options, extension }).pipe(
    Layer.provide([runtime, runtimeTools, ParleyServer.layerSessionsSql.pipe(Layer.provide(sql))]),
    // Node's HTTP server as the server's own layers run it: a stop drains, for at most `shutdownTimeout`.
    Layer.provideMerge(ParleyServer.layerHttpServer(options))
  )
}
