/**
 * What a runner can say about its cluster: the runners registered (healthy or not), how many shards each is assigned,
 * and this runner's own part — the shards it holds the lock of and the `Tree` entities it has in memory. Read from the
 * cluster's runner storage (`cluster_runners` on PostgreSQL) and this process's `Sharding`; a runner's share of the
 * shards is computed as every runner computes it (`effect/HashRing` over the healthy runners of each shard group).
 *
 * `ClusterRuntime.layerSocket` and `layerSingle` provide the service; `ClusterServer` serves it at
 * `GET /cluster/status` and `parley cluster status` prints it.
 *
 * @example
 * ```ts
 * import { ClusterStatus } from "@parley/cluster"
 * import { Console, Effect } from "effect"
 *
 * // On a runner (under ClusterRuntime.layerSocket): how the shards are spread.
 * const report = Effect.gen(function*() {
 *   const status = yield* ClusterStatus.get
 *   for (const runner of status.runners) yield* Console.log(runner.address, runner.shards)
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Runner from "effect/cluster/Runner"
import type * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as ShardId from "effect/cluster/ShardId"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HashRing from "effect/HashRing"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** A count: a whole number, zero or more. */
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A runner registered in the cluster.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class RunnerStatus extends Schema.Class<RunnerStatus>("@parley/cluster/ClusterStatus/RunnerStatus")({
  /** Where the other runners reach it (`host:port`). */
  address: Schema.String,
  /** Whether the cluster counts it healthy (only healthy runners are assigned shards). */
  healthy: Schema.Boolean,
  /** How many shards it is assigned, all groups together. */
  shards: NonNegativeInt,
  /** Whether it is the runner that answered. */
  self: Schema.Boolean
}) {}

/**
 * The cluster as one runner sees it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Status extends Schema.Class<Status>("@parley/cluster/ClusterStatus/Status")({
  /** This runner's address (absent for a process that is not a runner). */
  runner: Schema.optional(Schema.String),
  /** The shard groups and how many shards each has. */
  groups: Schema.Array(Schema.String),
  shardsPerGroup: NonNegativeInt,
  /** The runners registered, by address. */
  runners: Schema.Array(RunnerStatus),
  /** The shards this runner holds the lock of now (it serves their trees). */
  shardsHeld: NonNegativeInt,
  /** The `Tree` entities this runner has in memory. */
  trees: NonNegativeInt
}) {}

/**
 * The cluster's runner storage could not be read.
 *
 * @since 0.1.0
 * @category Errors
 */
export class StatusUnavailable extends Schema.TaggedError<StatusUnavailable>(
  "@parley/cluster/ClusterStatus/StatusUnavailable"
)("StatusUnavailable", { description: Schema.String }, { httpApiStatus: 503 }) {}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly get: Effect.Effect<Status, StatusUnavailable>
}

/**
 * @since 0.1.0
 * @category Tags
 */
export class ClusterStatus extends Context.Service<ClusterStatus, Service>()("@parley/cluster/ClusterStatus") {}

/**
 * The status of the cluster of the `Sharding` in context.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const get: Effect.Effect<Status, StatusUnavailable, ClusterStatus> = Effect.flatMap(
  ClusterStatus,
  (service) => service.get
)

/** How many shards (all groups) each healthy runner is assigned, by address, as `Sharding` assigns them. */
const assignments = (
  runners: ReadonlyArray<readonly [runner: Runner.Runner, healthy: boolean]>,
  shardsPerGroup: number
): Map<string, number> => {
  const counts = new Map<string, number>()
  const rings = new Map<string, HashRing.HashRing<RunnerAddress.RunnerAddress>>()
  for (const [runner, healthy] of runners) {
    if (!healthy) continue
    for (const group of runner.groups) {
      let ring = rings.get(group)
      if (ring === undefined) {
        ring = HashRing.make()
        rings.set(group, ring)
      }
      HashRing.add(ring, runner.address, { weight: runner.weight })
    }
  }
  for (const ring of rings.values()) {
    for (const address of HashRing.getShards(ring, shardsPerGroup) ?? []) {
      const key = hostPort(address)
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
  }
  return counts
}

/** A runner's address as `host:port`. */
const hostPort = (address: RunnerAddress.RunnerAddress) => `${address.host}:${address.port}`

/**
 * The service over the cluster's `RunnerStorage`, `ShardingConfig` and this process's `Sharding`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: Effect.Effect<
  Service,
  never,
  Sharding.Sharding | RunnerStorage.RunnerStorage | ShardingConfig.ShardingConfig
> = Effect.gen(function*() {
  const sharding = yield* Sharding.Sharding
  const storage = yield* RunnerStorage.RunnerStorage
  const config = yield* ShardingConfig.ShardingConfig
  const self = Option.map(config.runnerAddress, hostPort)
  const groups = [...config.availableShardGroups].sort()
  const shards = groups.flatMap((group) =>
    Array.from({ length: config.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1))
  )
  return {
    get: Effect.gen(function*() {
      const registered = yield* Effect.mapError(
        storage.getRunners,
        (error) => new StatusUnavailable({ description: `the cluster's runners could not be read: ${error.message}` })
      )
      const counts = assignments(registered, config.shardsPerGroup)
      const runners = registered
        .map(([runner, healthy]) => {
          const address = hostPort(runner.address)
          return new RunnerStatus({
            address,
            healthy,
            shards: counts.get(address) ?? 0,
            self: Option.contains(self, address)
          })
        })
        .sort((a, b) => a.address.localeCompare(b.address))
      return new Status({
        runner: Option.getOrUndefined(self),
        groups,
        shardsPerGroup: config.shardsPerGroup,
        runners,
        shardsHeld: shards.filter((shard) => sharding.hasShardId(shard)).length,
        trees: yield* sharding.activeEntityCount
      })
    })
  }
})

/**
 * The service (see `make`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<
  ClusterStatus,
  never,
  Sharding.Sharding | RunnerStorage.RunnerStorage | ShardingConfig.ShardingConfig
> = Layer.effect(ClusterStatus, make)
