/**
 * @since 0.1.0
 */

/**
 * The cluster's routes on a `ClusterServer`: `GET /cluster/status` (see the module).
 *
 * @since 0.1.0
 */
export * as ClusterApi from "./ClusterApi.js"

/**
 * Parley's runtime on `@effect/cluster` (see the module).
 *
 * @since 0.1.0
 */
export * as ClusterRuntime from "./ClusterRuntime.js"

/**
 * Parley's session server as a runner of a cluster (see the module).
 *
 * @since 0.1.0
 */
export * as ClusterServer from "./ClusterServer.js"

/**
 * What a runner can say about its cluster: runners, their shards, its trees (see the module).
 *
 * @since 0.1.0
 */
export * as ClusterStatus from "./ClusterStatus.js"

/**
 * What each runner reports about its part: trees, messages, shards, shard moves (see the module).
 *
 * @since 0.1.0
 */
export * as RunnerMetrics from "./RunnerMetrics.js"

/**
 * A session tree as an `@effect/cluster` entity (see the module).
 *
 * @since 0.1.0
 */
export * as TreeEntity from "./TreeEntity.js"
