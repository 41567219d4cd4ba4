import { assert, describe, it } from "@effect/vitest"
import type { ClusterStatus } from "@parley/cluster"
import type { Ids, TurnEvent, TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import type { Transport } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { HttpTransport } from "@parley/transport-http"
import type { Context } from "effect"
import { Effect, Fiber, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Runner } from "./children.js"
import { spawnRunner } from "./children.js"
import { freePorts, pgSchema } from "./databases.js"
import { checkRun, inFlight, read } from "./fixtures/ledger.js"
import { lookupPrice, pricer } from "./fixtures/pricing.js"
import { key, until } from "./fixtures/servers.js"

// The scale: three runner processes, each a `ClusterServer` (Parley's HTTP API over its runner), serve 300
// session trees on one PostgreSQL schema. This process is no runner: it drives every tree over HTTP, each approval
// answered through another server than the one its session was started on. A third of the approvals answered, the
// first runner is killed (SIGKILL) while it runs tools; a fourth runner process joins and takes shards; the next third
// answered, the second runner is drained (SIGTERM) while it runs tools; the last third is answered through the two
// left. Every turn completes, every opened callback is resolved exactly once (answered), no tool whose start was
// recorded begins twice (the ledger every runner writes), turns run on the runner that joined, and every tree's log is
// gap-free and in order.

const TREES = 300
const BATCH = TREES / 3
/** How long each `lookup_price` run takes: long enough to kill a runner in the middle of some. */
const TOOL_MS = 1500

/** Every shard assigned once over the healthy runners, the one asked holding all of its own. */
const settled = (runners: number) => (status: ClusterStatus.Status) => {
  const healthy = status.runners.filter((runner) => runner.healthy)
  return healthy.length === runners && healthy.every((runner) => runner.shards > 0) &&
    healthy.reduce((sum, runner) => sum + runner.shards, 0) === status.shardsPerGroup &&
    status.shardsHeld === status.runners.find((runner) => runner.self)?.shards
}

interface Tree {
  readonly product: string
  /** The server its session was started on. */
  readonly start: Runner
  readonly turn: Turn.Turn
  readonly callbackId: Ids.CallbackId
}

describe("ClusterServer processes at scale", () => {
  it.live(
    "300 trees answered over HTTP through any server: a runner killed mid-turn, one drained, one joining",
    () =>
      Effect.gen(function*() {
        const began = Date.now()
        const elapsed = () => `${((Date.now() - began) / 1000).toFixed(1)} s`
        const url = yield* pgSchema
        const ledger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "parley-ledger-")), "ledger.txt")
        const [p1, p2, p3, p4] = yield* freePorts(4)
        const spawn = (port: number) => spawnRunner({ url, port, ledger, took: TOOL_MS, http: true })
        // The first alone (it creates the cluster's and the tenants' tables), then two at once.
        const first = yield* spawn(p1)
        const [second, third] = yield* Effect.all([spawn(p2), spawn(p3)], { concurrency: 2 })
        const spawned = [first, second, third]
        // On a failure, what the runners said.
        yield* Effect.addFinalizer((exit) =>
          exit._tag === "Success" ?
            Effect.void :
            Effect.forEach(
              spawned,
              (runner) => Effect.logError(`runner ${runner.pid} said:\n${runner.output().slice(-4000)}`),
              { discard: true }
            )
        )
        for (const runner of [first, second, third]) yield* until(runner.url ?? "", settled(3))
        yield* Effect.log(`${elapsed()}: three runners serve`)

        const transports = new Map<Runner, Context.Context<Transport.Transport>>()
        const through = (runner: Runner) =>
          Effect.gen(function*() {
            const known = transports.get(runner)
            if (known !== undefined) return known
            const built = yield* Layer.build(HttpTransport.layer({ url: runner.url ?? "", apiKey: Redacted.make(key) }))
            transports.set(runner, built)
            return built
          })
        const agent = pricer(lookupPrice({ took: TOOL_MS, note: () => undefined }))
        const starts = [first, second, third]
        for (const runner of starts) yield* through(runner)
        const trees: ReadonlyArray<Tree> = yield* Effect.forEach(
          Array.from({ length: TREES }, (_, i) => i),
          (i) =>
            Effect.gen(function*() {
              const product = `p${i}`
              const session = yield* Agent.startSession(agent)
              const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
              const state = yield* Turn.result(turn)
              assert.strictEqual(state._tag, "Blocked", `${product}: ${state._tag}`)
              const callbackId = (state as TurnState.Blocked).callbacks[0].id
              return { product, start: starts[i % 3], turn, callbackId }
            }).pipe(Effect.provide(transports.get(starts[i % 3])!)),
          { concurrency: 24 }
        )
        yield* Effect.log(`${elapsed()}: ${TREES} trees blocked on their approvals`)

        let redelivered = 0
        /** Answers a batch, each through the first of `answerers` that is not the server its session started on. */
        const answer = (batch: ReadonlyArray<Tree>, answerers: ReadonlyArray<Runner>) =>
          Effect.forEach(batch, (tree) =>
            Effect.gen(function*() {
              const through = answerers.find((runner) => runner !== tree.start)!
              const answered = yield* Turn.answer(tree.turn, tree.callbackId, new Answer.AllowApproval()).pipe(
                Effect.provide(transports.get(through)!),
                Effect.as(true),
                // Its runner died after committing it, before replying: sent again, the caller hears the winning
                // answer, its own.
                Effect.catchTag(
                  "CallbackAlreadyAnswered",
                  (error) => Effect.succeed(error.answer?._tag === "AllowApproval" ? false : undefined)
                )
              )
              assert.isDefined(answered, `${tree.product}: another answer won`)
              if (!answered) redelivered++
            }), { concurrency: 16, discard: true })
        /** Until `victim` runs at least three tools (real time, 60 s at most). */
        const busy = (victim: Runner) =>
          Effect.gen(function*() {
            for (let attempt = 0; attempt < 600; attempt++) {
              const running = inFlight(read(ledger), victim.pid)
              if (running.length >= 3) return running.length
              yield* Effect.sleep("100 millis")
            }
            return yield* Effect.die(new Error(`runner ${victim.pid} never ran three tools at once`))
          })
        /** Every turn of the batch ends, read through `reader`. */
        const results = (batch: ReadonlyArray<Tree>, reader: Runner) =>
          Effect.forEach(batch, (tree) => Turn.result(tree.turn), { concurrency: 24 }).pipe(
            Effect.provide(transports.get(reader)!),
            Effect.timeout("120 seconds")
          )

        // The first third: the first runner killed while it runs tools; a fourth joins.
        const batchA = trees.slice(0, BATCH)
        const answeringA = yield* Effect.forkChild(answer(batchA, [second, third]))
        const runningA = yield* busy(first)
        yield* first.kill("SIGKILL")
        const killedAt = Date.now()
        const joining = yield* Effect.forkChild(spawn(p4))
        yield* Fiber.join(answeringA)
        const endedA = yield* results(batchA, third)
        yield* Effect.log(
          `${elapsed()}: SIGKILL of a runner running ${runningA} tools; the batch ended ${
            Date.now() - killedAt
          } ms later`
        )
        const fourth = yield* Fiber.join(joining)
        spawned.push(fourth)
        const joined = yield* until(fourth.url ?? "", settled(3))
        assert.isAbove(joined.shardsHeld, 0)
        yield* through(fourth)
        yield* Effect.log(`${elapsed()}: the fourth runner joined, holding ${joined.shardsHeld} shards`)

        // The second third: the second runner drained while it runs tools.
        const batchB = trees.slice(BATCH, 2 * BATCH)
        const answeringB = yield* Effect.forkChild(answer(batchB, [third, fourth]))
        const runningB = yield* busy(second)
        yield* second.kill("SIGTERM")
        const drainedAt = Date.now()
        yield* Fiber.join(answeringB)
        const endedB = yield* results(batchB, fourth)
        yield* Effect.log(
          `${elapsed()}: SIGTERM of a runner running ${runningB} tools; the batch ended ${
            Date.now() - drainedAt
          } ms later`
        )

        // The last third, through the two runners left.
        const batchC = trees.slice(2 * BATCH)
        yield* until(third.url ?? "", settled(2))
        yield* answer(batchC, [third, fourth])
        const endedC = yield* results(batchC, third)
        yield* Effect.log(`${elapsed()}: every turn ended (${redelivered} answers redelivered)`)

        const ended = [...endedA, ...endedB, ...endedC]
        const lines = read(ledger)
        const store = SessionStore.get(yield* Layer.build(Layer.orDie(SqlStore.layerPg({ url, maxConnections: 2 }))))
        for (const [i, tree] of trees.entries()) {
          const { product } = tree
          checkRun(lines, product, ended[i])
          yield* checkLog(product, yield* store.eventLog.read(tree.turn.sessionId, 0))
        }
        // The runner that joined ran tools, and turns to their end with the price it found (a run there cut off by a
        // shard moving away when the second runner drained is reported failed, as anywhere).
        const onFourth = lines.filter((line) => line.what === "finished" && line.pid === fourth.pid)
        // (Every turn completed, checked above; tree i prices product `p<i>`.)
        const pricedThere = onFourth.filter(({ product }) =>
          (ended[Number(product.slice(1))] as TurnState.Completed).text === `${product} costs 1,200 EUR.`
        )
        assert.isAbove(pricedThere.length, 0, "no turn completed on the runner that joined")
        yield* Effect.log(
          `${elapsed()}: ${onFourth.length} tools ran on the runner that joined, ${pricedThere.length} priced; logs checked`
        )
      }).pipe(Effect.scoped),
    300_000
  )
})

/**
 * A tree's log: gap-free, queued first and ended last, its one approval opened, then resolved once (answered: allowed),
 * before its tool ran.
 */
const checkLog = (product: string, events: ReadonlyArray<TurnEvent.TurnEvent>) =>
  Effect.sync(() => {
    assert.deepStrictEqual(events.map((event) => event.seq), events.map((_, i) => i), `${product}: seq`)
    const tags = events.map((event) => event._tag)
    assert.strictEqual(tags[0], "TurnQueued", product)
    assert.strictEqual(tags.at(-1), "TurnEnded", product)
    assert.strictEqual(tags.filter((tag) => tag === "TurnEnded").length, 1, product)
    const opened = events.filter((event) => event._tag === "CallbackOpened")
    assert.strictEqual(opened.length, 1, `${product}: callbacks opened`)
    const resolved = events.filter((event) => event._tag === "CallbackResolved")
    assert.deepStrictEqual(
      resolved.map((event) => [event.callbackId, event.resolution, event.answer?._tag]),
      [[opened[0].callback.id, "answered", "AllowApproval"]],
      `${product}: resolutions`
    )
    const started = tags.indexOf("ToolExecutionStarted")
    assert.isTrue(tags.indexOf("CallbackOpened") < tags.indexOf("CallbackResolved"), product)
    if (started >= 0) assert.isTrue(tags.indexOf("CallbackResolved") < started, product)
  })
