import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import type { ClusterStatus } from "@parley/cluster"
import { ClusterServer, RunnerMetrics } from "@parley/cluster"
import { Agent, Session, Turn } from "@parley/core"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Metric, Redacted } from "effect"
import { FetchHttpClient, HttpServer } from "effect/http"
import { freePorts, pgSchema, sleepLive } from "./databases.js"
import { brain, pricer } from "./fixtures/pricing.js"
import { client, clusterServers, key, statusOf, until } from "./fixtures/servers.js"
import { shardingConfig } from "./runners.js"

// `GET /cluster/status` of two `ClusterServer.layerPg` servers of one cluster on PostgreSQL: each lists both runners,
// their shards summing to the cluster's, its own part (shards held, trees in memory), and each runner's metrics say
// the same; a bad key is refused (401).

const settled = (status: ClusterStatus.Status) =>
  status.runners.length === 2 && status.runners.every((runner) => runner.healthy && runner.shards > 0) &&
  status.shardsHeld === status.runners.find((runner) => runner.self)?.shards

describe("ClusterStatus over HTTP", () => {
  it.live(
    "two servers of one cluster: both runners, their shards summing to the cluster's",
    () =>
      Effect.gen(function*() {
        const { runnerPorts, tool, urls } = yield* clusterServers(2)
        const addresses = runnerPorts.map((port) => `127.0.0.1:${port}`).sort()
        for (const [i, serverUrl] of urls.entries()) {
          const status = yield* until(serverUrl, settled)
          assert.deepStrictEqual(status.runners.map((runner) => runner.address), addresses)
          assert.deepStrictEqual(status.groups, ["default"])
          assert.strictEqual(status.shardsPerGroup, shardingConfig.shardsPerGroup)
          assert.strictEqual(
            status.runners.reduce((sum, runner) => sum + runner.shards, 0),
            shardingConfig.shardsPerGroup
          )
          assert.strictEqual(status.runner, `127.0.0.1:${runnerPorts[i]}`)
          assert.deepStrictEqual(
            status.runners.filter((runner) => runner.self).map((runner) => runner.address),
            [`127.0.0.1:${runnerPorts[i]}`]
          )
        }
        // Both servers agree on the assignment.
        const [first, second] = yield* Effect.forEach(urls, statusOf)
        assert.deepStrictEqual(
          first.runners.map((runner) => runner.shards),
          second.runners.map((runner) => runner.shards)
        )
        // Trees started through the first server are in memory on their runners: the two counts sum to them.
        const agent = pricer(tool)
        yield* Effect.forEach(["atlas", "globe", "compass", "sextant"], (product) =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
            yield* Turn.result(turn)
          }).pipe(Effect.provide(HttpTransport.layer({ url: urls[0], apiKey: Redacted.make(key) }))))
        const trees = yield* Effect.forEach(urls, (serverUrl) => Effect.map(statusOf(serverUrl), (s) => s.trees))
        assert.strictEqual(trees[0] + trees[1], 4, `trees in memory: ${trees.join(", ")}`)

        // Each runner's metrics, tagged with its address: the same trees, the messages that placed them, its shards
        // (sampled every second) and the rebalance when the second runner joined (the first gave shards up).
        const metrics = runnerPorts.map((port) => RunnerMetrics.forRunner(`127.0.0.1:${port}`))
        const treesCounted = yield* Effect.forEach(metrics, (m) => Effect.map(Metric.value(m.trees), (v) => v.count))
        assert.deepStrictEqual(treesCounted, trees)
        const sent = yield* Effect.forEach(
          metrics,
          (m) => Effect.map(Metric.value(m.messages("SendMessage")), (v) => v.count)
        )
        assert.isAtLeast(sent[0] + sent[1], 4)
        yield* sleepLive("1500 millis")
        const final = yield* statusOf(urls[0])
        for (const [i, m] of metrics.entries()) {
          const gauge = yield* Metric.value(m.shards)
          assert.strictEqual(
            gauge.value,
            final.runners.find((r) => r.address === `127.0.0.1:${runnerPorts[i]}`)?.shards
          )
          assert.isAtLeast((yield* Metric.value(m.acquired)).count, gauge.value)
        }
        assert.isAtLeast((yield* Metric.value(metrics[0].released)).count, 1)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a bad key is refused: 401, nothing said about the cluster; storage unreadable: 503",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const model = yield* ScriptedModel.fromFunction(brain)
        const [port] = yield* freePorts(1)
        const server = ClusterServer.layerPg({
          acceptDefinitions: true,
          keys: ParleyServer.parseKeys(`${key}:acme`),
          models: Models.single(model.languageModel),
          log: false,
          url,
          port: 0,
          runner: { host: "127.0.0.1", port },
          shardingConfig
        })
        const address = Context.get(yield* Layer.build(Layer.orDie(server)), HttpServer.HttpServer).address
        const serverUrl = address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${address.port}`
        const refused = yield* Effect.flip(
          Effect.flatMap(client(serverUrl, "not-the-key-0123456789"), (api) => api.cluster.status())
        ).pipe(Effect.provide(FetchHttpClient.layer))
        assert.strictEqual(refused._tag, "Unauthorized")
        const raw = yield* Effect.promise(() => fetch(`${serverUrl}/cluster/status`))
        assert.strictEqual(raw.status, 401)
        assert.notInclude(yield* Effect.promise(() => raw.text()), "127.0.0.1")
        // The right key is answered.
        const status = yield* until(serverUrl, (s) => s.runners.length === 1 && s.shardsHeld === s.shardsPerGroup)
        assert.strictEqual(status.runners[0].shards, shardingConfig.shardsPerGroup)
        // The runner storage unreadable (its table gone): 503, the typed error.
        const admin = yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
        const sql = Context.get(admin, PgClient.PgClient)
        yield* sql`ALTER TABLE cluster_runners RENAME TO cluster_runners_away`
        const unavailable = yield* Effect.flip(statusOf(serverUrl))
        assert.strictEqual(unavailable._tag, "StatusUnavailable")
        assert.include(
          unavailable._tag === "StatusUnavailable" ? unavailable.description : "",
          "the cluster's runners could not"
        )
        const raw503 = yield* Effect.promise(() =>
          fetch(`${serverUrl}/cluster/status`, { headers: { authorization: `Bearer ${key}` } })
        )
        assert.strictEqual(raw503.status, 503)
        yield* sql`ALTER TABLE cluster_runners_away RENAME TO cluster_runners`
      }).pipe(Effect.scoped),
    120_000
  )
})
