/**
 * What each runner of the cluster reports about its part, with Effect's own `Metric` (exported when the program
 * provides a metrics exporter, e.g. `@parley/telemetry`'s). Every value is tagged `parley.cluster.runner` with the
 * runner's address (`host:port`), so the runners' series stay apart once collected.
 *
 * | metric | kind | what |
 * |---|---|---|
 * | `parley.cluster.trees` | up-down counter | `Tree` entities in memory on the runner (placed trees) |
 * | `parley.cluster.messages` | counter, tagged `parley.cluster.message` | `Tree` messages handled (`SendMessage`, `Answer`, `Cancel`, `RevokeGrant`, `Resume`) |
 * | `parley.cluster.shards` | gauge | shards the runner holds the lock of (sampled every second) |
 * | `parley.cluster.shard_moves` | counter, tagged `parley.cluster.move` | shards the runner took (`acquired`) or gave up (`released`): rebalances |
 *
 * @example
 * ```ts
 * import { RunnerMetrics } from "@parley/cluster"
 * import { Effect, Metric } from "effect"
 *
 * // How many shards the runner at 127.0.0.1:34431 holds now.
 * const shards = Metric.value(RunnerMetrics.forRunner("127.0.0.1:34431").shards)
 * export const report = Effect.flatMap(shards, (state) => Effect.log(`shards held: ${state.value}`))
 * ```
 *
 * @since 0.1.0
 */
import * as Metric from "effect/Metric"

/**
 * `Tree` entities in memory on a runner (an up-down counter: +1 when one starts, -1 when it stops).
 *
 * @since 0.1.0
 * @category Models
 */
export const trees: Metric.Counter<number> = Metric.counter("parley.cluster.trees", {
  description: "Tree entities in memory on the runner"
})

/**
 * `Tree` messages a runner handled, tagged `parley.cluster.message`.
 *
 * @since 0.1.0
 * @category Models
 */
export const messages: Metric.Counter<number> = Metric.counter("parley.cluster.messages", {
  description: "Tree messages the runner handled, by message"
})

/**
 * Shards a runner holds the lock of.
 *
 * @since 0.1.0
 * @category Models
 */
export const shards: Metric.Gauge<number> = Metric.gauge("parley.cluster.shards", {
  description: "Shards the runner holds"
})

/**
 * Shards a runner took or gave up, tagged `parley.cluster.move` (`acquired`, `released`).
 *
 * @since 0.1.0
 * @category Models
 */
export const shardMoves: Metric.Counter<number> = Metric.counter("parley.cluster.shard_moves", {
  description: "Shards the runner acquired or released"
})

/**
 * A runner's metrics, tagged with its address.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Tagged {
  readonly trees: Metric.Counter<number>
  readonly messages: (message: string) => Metric.Counter<number>
  readonly shards: Metric.Gauge<number>
  readonly acquired: Metric.Counter<number>
  readonly released: Metric.Counter<number>
}

/**
 * The metrics of the runner at `address` (`host:port`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const forRunner = (address: string): Tagged => {
  const tag = <Input, State>(metric: Metric.Metric<Input, State>) =>
    Metric.withAttributes(metric, { "parley.cluster.runner": address })
  const byMessage = new Map<string, Metric.Counter<number>>()
  const moves = tag(shardMoves)
  return {
    trees: tag(trees),
    messages: (message) => {
      let metric = byMessage.get(message)
      if (metric === undefined) {
        metric = Metric.withAttributes(tag(messages), { "parley.cluster.message": message })
        byMessage.set(message, metric)
      }
      return metric
    },
    shards: tag(shards),
    acquired: Metric.withAttributes(moves, { "parley.cluster.move": "acquired" }),
    released: Metric.withAttributes(moves, { "parley.cluster.move": "released" })
  }
}
