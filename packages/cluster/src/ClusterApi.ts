/**
 * The cluster's routes on a `ClusterServer`, behind the protocol's API keys: `GET /cluster/status` answers the
 * `ClusterStatus` of the runner asked (401 without a valid key, 503 when the cluster's runner storage cannot be read).
 * `Api` is `ProtocolApi` with this group: `HttpApiClient.make(ClusterApi.Api)` is a client of both.
 *
 * @example
 * ```ts
 * import { ClusterApi } from "@parley/cluster"
 * import { Effect } from "effect"
 * import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
 * import { HttpApiClient } from "effect/http-api"
 *
 * // How the shards of the cluster are spread, asked of one of its servers.
 * const status = Effect.gen(function*() {
 *   const client = yield* HttpApiClient.make(ClusterApi.Api, {
 *     baseUrl: "http://127.0.0.1:8787",
 *     transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken("a-key-0123456789"))
 *   })
 *   return yield* client.cluster.status()
 * }).pipe(Effect.provide(FetchHttpClient.layer))
 * ```
 *
 * @since 0.1.0
 */
import { TransportFailure } from "@parley/core/ParleyError"
import { Authorization, PayloadTooLarge, ProtocolApi } from "@parley/core/ProtocolApi"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import type * as Layer from "effect/Layer"
import * as ClusterStatus from "./ClusterStatus.js"

/**
 * `GET /cluster/status`.
 *
 * @since 0.1.0
 * @category Groups
 */
export class ClusterGroup extends HttpApiGroup.make("cluster")
  .add(
    HttpApiEndpoint.get("status", "/cluster/status", {
      success: ClusterStatus.Status,
      // The protocol's errors of every route too (a transport failure: 503; a body too large: 413).
      error: [ClusterStatus.StatusUnavailable, TransportFailure.pipe(HttpApiSchema.status(503)), PayloadTooLarge]
    })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "The cluster as the runner asked sees it: its runners, their shards, its trees.")
{}

/**
 * The protocol and the cluster's routes.
 *
 * @since 0.1.0
 * @category Models
 */
export class Api extends ProtocolApi.add(ClusterGroup) {}

/**
 * The group's handlers over the `ClusterStatus` in context (the server gives the `Authorization`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<
  HttpApiGroup.Service<"parley", "cluster">,
  never,
  ClusterStatus.ClusterStatus | Authorization
> = HttpApiBuilder.group(
  Api,
  "cluster",
  (handlers) => Effect.map(ClusterStatus.ClusterStatus, (service) => handlers.handle("status", () => service.get))
)
