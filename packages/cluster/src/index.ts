/**
 * @since 0.1.0
 */

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
 * A session tree as an `@effect/cluster` entity (see the module).
 *
 * @since 0.1.0
 */
export * as TreeEntity from "./TreeEntity.js"
