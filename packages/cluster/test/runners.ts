/**
 * Runners of one cluster for the tests: each a `ClusterRuntime.layerSocket` on 127.0.0.1 (a port of its own), its
 * engine's log and the cluster's runner storage in one PostgreSQL schema, on the given model and runtime tools.
 */
import { PgClient } from "@effect/sql-pg"
import { ClusterRuntime } from "@parley/cluster"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import type { Tool } from "@parley/tools"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type { LanguageModel } from "effect/ai"
import { RunnerAddress, ShardId, Sharding } from "effect/cluster"
import { freePorts, sleepLive } from "./databases.js"

/**
 * Short lock times: a runner that dies gives its shards up within seconds. The lock table, not PostgreSQL's advisory
 * locks: those are per database, not per schema, so the clusters of tests running at once would take each other's
 * shards.
 */
export const shardingConfig = {
  shardLockDisableAdvisory: true,
  shardsPerGroup: 30,
  shardLockRefreshInterval: "1 second",
  shardLockExpiration: "8 seconds",
  refreshAssignmentsInterval: "500 millis",
  runnerHealthCheckInterval: "1 second",
  entityTerminationTimeout: "2 seconds"
} as const

export const runner = (options: {
  readonly url: string
  readonly port: number
  readonly model: LanguageModel.LanguageModel
  readonly runtimeTools?: ReadonlyArray<Tool.Any> | undefined
}) =>
  ClusterRuntime.layerSocket({
    wakeUpInterval: "1 second",
    shardingConfig: { ...shardingConfig, runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", options.port)) }
  }).pipe(
    Layer.provide([
      Layer.orDie(SqlStore.layerPg({ url: options.url, maxConnections: 4 })),
      PgClient.layer({ url: Redacted.make(options.url), maxConnections: 4 }),
      Connectors.layer([Connectors.demoMailbox()]),
      RuntimeTools.layer(...(options.runtimeTools ?? [])),
      Models.layer(Models.single(options.model))
    ]),
    Layer.orDie
  )

/**
 * Starts runners one after another in the scope (their first start creates the cluster's tables: at once, they would
 * race to create them) and returns the first one's services.
 */
export const runners = (options: {
  readonly url: string
  readonly count: number
  readonly model: LanguageModel.LanguageModel
  readonly runtimeTools?: ReadonlyArray<Tool.Any> | undefined
}) =>
  Effect.gen(function*() {
    const ports = yield* freePorts(options.count)
    const contexts = []
    for (const port of ports) contexts.push(yield* Layer.build(runner({ ...options, port })))
    yield* settled(contexts.map((context) => Context.get(context, Sharding.Sharding)))
    return contexts
  })

/**
 * Waits (real time, 60 s at most) until the runners split the shards among them, each shard held by one runner and
 * each runner holding some: trees created then stay where they are placed (no rebalancing under a scenario).
 */
export const settled = (runners: ReadonlyArray<Sharding.Sharding["Service"]>) =>
  Effect.gen(function*() {
    const shards = Array.from({ length: shardingConfig.shardsPerGroup }, (_, i) => ShardId.make("default", i + 1))
    for (let attempt = 0; attempt < 1200; attempt++) {
      const held = runners.map((sharding) => shards.filter((shard) => sharding.hasShardId(shard)).length)
      const once = shards.every((shard) => runners.filter((sharding) => sharding.hasShardId(shard)).length === 1)
      if (once && held.every((count) => count > 0)) return
      yield* sleepLive("50 millis")
    }
    return yield* Effect.die(new Error("the runners never settled on their shards"))
  })
