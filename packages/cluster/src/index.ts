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
 * A session tree as an `@effect/cluster` entity (see the module).
 *
 * @since 0.1.0
 */
export * as TreeEntity from "./TreeEntity.js"
