/**
 * The cluster bench (issue 22): approval-loop turns per second through `@parley/cluster` with 1, 2 and 3 runners on
 * one PostgreSQL database and one machine. The bench's own process is the first runner (its sessions are created and
 * driven through its `Transport`); the others are child processes (`runnerProcess.ts`). Each turn: `sendMessage`, the
 * turn blocks on its approval, the approval is answered by id, the runtime runs `lookup_price`, the turn completes
 * (checked: its text). One tree per turn; trees are placed across the runners, so most commands travel to another
 * process.
 *
 * `npm run bench:cluster -- --sessions=60 --turns=5 --runners=1,2,3` (PostgreSQL: `PARLEY_TEST_PG_URL`, default the
 * test database of `scripts/postgres.sh`). Reports turns/s and each runner's CPU time per turn.
 *
 * `--resume=N` adds the resume phase (`resume.ts`): a runner of three holding its share of N trees (half paused on
 * approvals, half running a tool) is killed; p50 and p99 of the time from the kill to each of its trees' next event.
 * `--runners=` (empty) runs that phase alone.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Console, Context, Effect, Layer } from "effect"
import { Sharding } from "effect/cluster"
import { cpuOf, freePort, schema, settled, spawnRunner } from "./processes.js"
import { measureResume } from "./resume.js"
import { agent, brain, runner, shardsPerGroup } from "./runner.js"

const arg = (name: string, fallback: string) =>
  process.argv.find((value) => value.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const sessions = Number(arg("sessions", "60"))
const turnsEach = Number(arg("turns", "5"))
const runnerCounts = arg("runners", "1,2,3").split(",").filter((count) => count !== "").map(Number)
const resumeTrees = Number(arg("resume", "0"))
const measure = (count: number) =>
  Effect.gen(function*() {
    const url = yield* schema
    const model = yield* ScriptedModel.fromFunction(brain)
    const context = yield* Layer.build(runner({ url, port: yield* freePort, model: model.languageModel }))
    const children = []
    for (let i = 1; i < count; i++) children.push(yield* spawnRunner(url, yield* freePort))
    yield* settled(Context.get(context, Sharding.Sharding), count, shardsPerGroup)
    const loop = (rounds: number) =>
      Effect.forEach(Array.from({ length: sessions }), () =>
        Effect.gen(function*() {
          for (let i = 0; i < rounds; i++) {
            // A new session (a new tree) per turn: the brain decides from the whole conversation.
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, "What does the atlas cost?")
            const blocked = yield* Turn.result(turn)
            if (blocked._tag !== "Blocked") return yield* Effect.die(new Error(`not blocked: ${blocked._tag}`))
            yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
            const done = yield* Turn.result(turn)
            if (done._tag !== "Completed" || done.text !== "The atlas costs 129 EUR.") {
              return yield* Effect.die(new Error(`not completed: ${done._tag}`))
            }
          }
        }), { concurrency: "unbounded", discard: true }).pipe(Effect.provide(context))
    yield* loop(1) // warm-up: every runner has loaded its code and trees
    const pids = [process.pid, ...children.map((child) => child.pid ?? -1)]
    const cpuBefore = pids.map(cpuOf)
    const started = Date.now()
    yield* loop(turnsEach)
    const seconds = (Date.now() - started) / 1000
    const turns = sessions * turnsEach
    const cpu = pids.map((pid, i) => (cpuOf(pid) - cpuBefore[i]) / turns)
    return { count, turns, seconds, cpu }
  }).pipe(Effect.scoped)

NodeRuntime.runMain(Effect.gen(function*() {
  if (runnerCounts.length > 0) {
    yield* Console.log(`| runners | turns | seconds | turns/s | CPU ms per turn (this runner, others) |`)
    yield* Console.log(`|---|---|---|---|---|`)
  }
  for (const count of runnerCounts) {
    const row = yield* measure(count)
    yield* Console.log(
      `| ${row.count} | ${row.turns} | ${row.seconds.toFixed(1)} | ${(row.turns / row.seconds).toFixed(1)} | ${
        row.cpu.map((ms) => ms.toFixed(2)).join(", ")
      } |`
    )
  }
  if (resumeTrees > 0) {
    const resumed = yield* measureResume(resumeTrees)
    yield* Console.log(
      `\nA runner of three killed (SIGKILL) holding its share of ${resumed.trees} trees (lock expiry 8 s, refreshed every` +
        ` 1 s; health checks every 1 s; wake-up every 5 s): from the kill to each tree's next event`
    )
    yield* Console.log(`| its trees | count | p50 ms | p99 ms | max ms |`)
    yield* Console.log(`|---|---|---|---|---|`)
    for (const row of resumed.rows) {
      yield* Console.log(`| ${row.kind} | ${row.trees} | ${row.p50} | ${row.p99} | ${row.max} |`)
    }
    yield* Console.log(
      `every turn ended ${resumed.recoveredIn} ms after the kill; CPU meanwhile (this runner, the other): ${
        resumed.cpu.map((ms) => `${ms.toFixed(0)} ms`).join(", ")
      }`
    )
  }
}))
