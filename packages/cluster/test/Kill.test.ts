import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Context, Effect, Layer } from "effect"
import { ShardId, Sharding } from "effect/cluster"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { spawnRunner } from "./children.js"
import { freePorts, pgSchema } from "./databases.js"
import { checkRun, read } from "./fixtures/ledger.js"
import { brain, lookupPrice, pricer } from "./fixtures/pricing.js"
import { runner, shardingConfig } from "./runners.js"

// Three runner processes and this one (a fourth runner, through which the test drives the sessions) on one PostgreSQL
// schema. Approvals are answered, the tools begin (they take 2 s), and the runner process that began the most is
// killed with SIGKILL: its shard locks lapse, the other runners take its shards, the wake-up singleton resumes its
// trees there. Then a second wave, and another runner process is stopped with SIGTERM (a drain: it releases its
// shards at once). Every turn completes, no tool whose start was recorded begins twice (the ledger, written by every
// process), a tool cut off by the stop is reported failed to the model, and every tree's log is gap-free.

const SESSIONS = 30

describe("ClusterRuntime.layerSocket: runner processes", () => {
  it.live(
    "runner processes killed (SIGKILL) and drained (SIGTERM) mid-tool: their trees resume elsewhere, no tool runs twice",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const ledger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "parley-ledger-")), "ledger.txt")
        const note = (what: "began" | "finished", product: string) =>
          fs.appendFileSync(ledger, `${what} ${product} ${process.pid}\n`)
        const tool = lookupPrice({ took: "2 seconds", note })
        const model = yield* ScriptedModel.fromFunction(brain)
        const [here, ...ports] = yield* freePorts(4)
        // This process's runner first (it creates the cluster's tables), then the three, one at a time.
        const context = yield* Layer.build(
          runner({ url, port: here, model: model.languageModel, runtimeTools: [tool] })
        )
        const children = []
        for (const port of ports) children.push(yield* spawnRunner({ url, port, ledger }))
        // Until the shards are split: this runner holds fewer than all of them, and the count holds for a second.
        const sharding = Context.get(context, Sharding.Sharding)
        const shards = Array.from({ length: shardingConfig.shardsPerGroup }, (_, i) => ShardId.make("default", i + 1))
        let last = -1
        for (let stable = 0; stable < 4;) {
          yield* Effect.sleep("250 millis")
          const held = shards.filter((shard) => sharding.hasShardId(shard)).length
          stable = held === last && held < shards.length ? stable + 1 : 0
          last = held
        }

        const agent = pricer(tool)
        const live = [...children]
        const store = SessionStore.get(yield* Layer.build(Layer.orDie(SqlStore.layerPg({ url, maxConnections: 2 }))))
        /**
         * A wave: sessions blocked on their approvals, answered; once the tools run, the live runner process that began
         * the most of this wave's is stopped with `signal`. Every turn completes, no tool begins twice, a tool cut off
         * is reported failed, every log is gap-free.
         */
        const wave = (name: string, signal: "SIGKILL" | "SIGTERM") =>
          Effect.gen(function*() {
            const turns = yield* Effect.forEach(
              Array.from({ length: SESSIONS }, (_, i) => `${name}-${i}`),
              (product) =>
                Effect.gen(function*() {
                  const session = yield* Agent.startSession(agent)
                  const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
                  const state = yield* Turn.result(turn)
                  assert.strictEqual(state._tag, "Blocked", `${product}: ${state._tag}`)
                  return { product, turn, blocked: state as TurnState.Blocked }
                }),
              { concurrency: 10 }
            ).pipe(Effect.provide(context))
            yield* Effect.forEach(
              turns,
              ({ blocked, turn }) => Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()),
              { concurrency: 10, discard: true }
            ).pipe(Effect.provide(context))
            yield* Effect.sleep("700 millis")
            const mine = new Set(turns.map((turn) => turn.product))
            const began = read(ledger).filter((line) => line.what === "began" && mine.has(line.product))
            const count = (pid: number) => began.filter((line) => line.pid === pid).length
            const victim = live.reduce((most, child) => count(child.pid) > count(most.pid) ? child : most)
            assert.isAbove(count(victim.pid), 0, "the victim runs tools when it is stopped")
            live.splice(live.indexOf(victim), 1)
            yield* victim.kill(signal)
            const stoppedAt = Date.now()

            const ended = yield* Effect.forEach(turns, ({ turn }) => Turn.result(turn), { concurrency: 10 }).pipe(
              Effect.provide(context),
              Effect.timeout("90 seconds")
            )
            const resumedIn = Date.now() - stoppedAt
            const lines = read(ledger)
            for (const [i, { product }] of turns.entries()) checkRun(lines, product, ended[i])
            for (const { turn } of turns) {
              const events = yield* store.eventLog.read(turn.sessionId, 0)
              assert.deepStrictEqual(events.map((event) => event.seq), events.map((_, i) => i))
            }
            yield* Effect.log(
              `${signal}: runner ${victim.pid} had begun ${
                count(victim.pid)
              } tools; every turn ended ${resumedIn} ms later`
            )
          })
        yield* wave("killed", "SIGKILL")
        yield* wave("drained", "SIGTERM")
      }).pipe(Effect.scoped),
    180_000
  )
})
