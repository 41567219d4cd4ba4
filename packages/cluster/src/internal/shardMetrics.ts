/**
 * The runner's shard metrics: every `interval`, how many shards it holds the lock of (`RunnerMetrics.shards`) and how
 * many it took or gave up since the last look (`RunnerMetrics.shardMoves`, its rebalances).
 */
import * as ShardId from "effect/cluster/ShardId"
import type * as Sharding from "effect/cluster/Sharding"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type * as RunnerMetrics from "../RunnerMetrics.js"

export const sample = (
  sharding: Sharding.Sharding["Service"],
  shards: { readonly groups: ReadonlyArray<string>; readonly perGroup: number },
  metrics: RunnerMetrics.Tagged,
  interval: Duration.Input
): Effect.Effect<void, never, Scope.Scope> => {
  const all = shards.groups.flatMap((group) =>
    Array.from({ length: shards.perGroup }, (_, i) => ShardId.make(group, i + 1))
  )
  let held = new Set<ShardId.ShardId>()
  const look = Effect.suspend(() => {
    const now = new Set(all.filter((shard) => sharding.hasShardId(shard)))
    const acquired = [...now].filter((shard) => !held.has(shard)).length
    const released = [...held].filter((shard) => !now.has(shard)).length
    held = now
    return Effect.all([
      Metric.update(metrics.shards, now.size),
      acquired === 0 ? Effect.void : Metric.update(metrics.acquired, acquired),
      released === 0 ? Effect.void : Metric.update(metrics.released, released)
    ], { discard: true })
  })
  return Effect.asVoid(Effect.forkScoped(Effect.repeat(look, Schedule.spaced(interval))))
}
