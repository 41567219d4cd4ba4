import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { ClusterRuntime, ClusterStatus } from "@parley/cluster"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Transport, Turn } from "@parley/core"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { RunnerAddress, ShardId, Sharding } from "effect/cluster"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { spawnRunner } from "./children.js"
import { freePorts, pgSchema } from "./databases.js"
import { read } from "./fixtures/ledger.js"
import { lookupPrice, pricer } from "./fixtures/pricing.js"
import { shardingConfig } from "./runners.js"

// Two runner processes on one PostgreSQL schema, and this process as a client-only member of their cluster
// (`ClusterRuntime.layerClient`): it starts every session, sends every turn, answers every approval, cancels one
// turn and revokes one grant; the runners run every turn (the ledger: every tool ran in a runner process, once). The
// client is no runner: not in `cluster_runners`, no shard lock, no lease, no shard held, no tree in memory; with the
// runners stopped, an answer or a cancel from it waits for a runner (nothing decided in the client). A client
// given a runner address, or a shard count that is no whole number, fails with `ConfigInvalid` before it starts.

const SESSIONS = 16
const CLIENT = "the-client-engine"

describe("ClusterRuntime.layerClient: a process that is no runner", () => {
  it.live(
    "sessions, turns, answers, a cancel and a revoke from a client: the runner processes run them all",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const sql = Context.get(
          yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
          PgClient.PgClient
        )
        const ledger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "parley-ledger-")), "ledger.txt")
        // The client's own tool never runs: the runners run the tool; the client only marks it on the definitions.
        const tool = lookupPrice({ took: "200 millis", note: () => assert.fail("a tool ran in the client") })
        const model = yield* ScriptedModel.fromFunction(() => assert.fail("the client called a model"))
        const client = (config: ClusterRuntime.ClientOptions["shardingConfig"]) =>
          ClusterRuntime.layerClient({ engine: { owner: CLIENT }, shardingConfig: config }).pipe(
            Layer.provide([
              Layer.orDie(SqlStore.layerPg({ url, maxConnections: 4 })),
              PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }),
              Connectors.layer([Connectors.demoMailbox()]),
              RuntimeTools.layer(tool),
              Models.layer(Models.single(model.languageModel))
            ])
          )

        // Bad configuration: a typed error, and nothing of the cluster made (its tables not even created).
        const withAddress = yield* Effect.flip(Effect.scoped(Layer.build(client({
          ...shardingConfig,
          runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", 34431))
        }))))
        assert.instanceOf(withAddress, ClusterRuntime.ConfigInvalid)
        assert.strictEqual((withAddress as ClusterRuntime.ConfigInvalid).option, "shardingConfig.runnerAddress")
        const noShards = yield* Effect.flip(
          Effect.scoped(Layer.build(client({ ...shardingConfig, shardsPerGroup: 0 })))
        )
        assert.instanceOf(noShards, ClusterRuntime.ConfigInvalid)
        assert.strictEqual((noShards as ClusterRuntime.ConfigInvalid).option, "shardingConfig.shardsPerGroup")
        const [made] = yield* sql<{ readonly runners: string | null }>`SELECT to_regclass('cluster_runners') AS runners`
        assert.isNull(made.runners)

        // Two runner processes (one after the other: the first creates the cluster's tables), then the client.
        const ports = yield* freePorts(2)
        const children = []
        for (const port of ports) children.push(yield* spawnRunner({ url, port, ledger, took: 200 }))
        const context = yield* Layer.build(client(shardingConfig))
        const here = <A, E>(effect: Effect.Effect<A, E, Transport.Transport | ClusterStatus.ClusterStatus>) =>
          Effect.provide(effect, context)
        let status = yield* here(ClusterStatus.get)
        for (let i = 0; i < 240 && !(status.runners.length === 2 && status.runners.every((r) => r.shards > 0)); i++) {
          yield* Effect.sleep("250 millis")
          status = yield* here(ClusterStatus.get)
        }
        const addresses = ports.map((port) => `127.0.0.1:${port}`).sort()
        assert.deepStrictEqual(status.runners.map((runner) => runner.address), addresses)
        assert.strictEqual(status.runner, undefined)

        // Sessions started and turns sent from the client, each blocked on its approval.
        const agent = pricer(tool)
        const products = Array.from({ length: SESSIONS }, (_, i) => `item-${i}`)
        const blocked = yield* here(Effect.forEach(products, (product) =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
            const state = yield* Turn.result(turn)
            assert.strictEqual(state._tag, "Blocked", `${product}: ${state._tag}`)
            return { product, session, turn, blocked: state as TurnState.Blocked }
          }), { concurrency: 8 }))

        // One turn cancelled from the client; the others' approvals answered from it (the first with a grant).
        const [cancelled, granted, waiting, ...rest] = blocked
        yield* here(Session.cancel(cancelled.session))
        assert.strictEqual((yield* here(Turn.result(cancelled.turn)))._tag, "Cancelled")
        yield* here(Turn.answer(
          granted.turn,
          granted.blocked.callbacks[0].id,
          new Answer.AllowApproval({ remember: "session" })
        ))
        yield* here(Effect.forEach(
          rest,
          ({ blocked, turn }) => Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()),
          { concurrency: 8, discard: true }
        ))
        const answered = [granted, ...rest]
        const ended = yield* here(Effect.forEach(answered, ({ turn }) => Turn.result(turn), { concurrency: 8 }))
        for (const [i, state] of ended.entries()) {
          const { product } = answered[i]
          assert.strictEqual(state._tag, "Completed", `${product}: ${state._tag}`)
          assert.strictEqual((state as TurnState.Completed).text, `${product} costs 1,200 EUR.`)
        }

        // The grant revoked from the client.
        const transport = yield* here(Transport.Transport)
        const grants = yield* transport.grants(granted.session.id)
        assert.strictEqual(grants.length, 1)
        yield* transport.revokeGrant({ sessionId: granted.session.id, grantId: grants[0].grantId })
        assert.deepStrictEqual(yield* transport.grants(granted.session.id), [])
        const open = yield* transport.listOpen()
        assert.deepStrictEqual(open.map((row) => row.callback.id), [waiting.blocked.callbacks[0].id])

        // Every tool ran once, in a runner process, and both runners ran some.
        const lines = read(ledger)
        for (const { product } of answered) {
          const runs = lines.filter((line) => line.what === "finished" && line.product === product)
          assert.strictEqual(runs.length, 1, `${product} ran ${runs.length} times`)
        }
        const pids = new Set(lines.map((line) => line.pid))
        assert.deepStrictEqual([...pids].sort(), children.map((child) => child.pid).sort())

        // The client is no runner: not registered, no shard lock, no lease, no shard held, no tree in memory.
        const registered = yield* sql<{ readonly address: string }>`SELECT address FROM cluster_runners`
        assert.deepStrictEqual(registered.map((row) => row.address).sort(), addresses)
        const locks = yield* sql<{ readonly address: string }>`SELECT DISTINCT address FROM cluster_locks`
        assert.includeMembers(addresses, locks.map((row) => row.address))
        const owners = yield* sql<{ readonly owner: string | null }>`SELECT DISTINCT owner FROM parley_trees`
        assert.notInclude(owners.map((row) => row.owner), CLIENT)
        status = yield* here(ClusterStatus.get)
        assert.strictEqual(status.shardsHeld, 0)
        assert.strictEqual(status.trees, 0)
        const sharding = Context.get(context, Sharding.Sharding)
        const shards = Array.from({ length: shardingConfig.shardsPerGroup }, (_, i) => ShardId.make("default", i + 1))
        assert.isFalse(shards.some((shard) => sharding.hasShardId(shard)))

        // With the runners stopped, the client decides nothing itself: an answer and a cancel wait for a runner.
        for (const child of children) yield* child.kill("SIGTERM")
        const answer = Turn.answer(waiting.turn, waiting.blocked.callbacks[0].id, new Answer.AllowApproval())
        for (const command of [answer, Session.cancel(waiting.session)]) {
          const late = yield* here(Effect.flip(Effect.timeout(command, "2 seconds")))
          assert.strictEqual(late._tag, "TimeoutError")
        }
        assert.deepStrictEqual((yield* transport.listOpen()).map((row) => row.callback.id), [
          waiting.blocked.callbacks[0].id
        ])
      }).pipe(Effect.scoped),
    180_000
  )
})
