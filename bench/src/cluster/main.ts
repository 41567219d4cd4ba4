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
 */
import { ShardId, Sharding } from "@effect/cluster"
import { NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Console, Context, Effect, Layer, Redacted } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as Net from "node:net"
import * as path from "node:path"
import { agent, brain, runner } from "./runner.js"

const arg = (name: string, fallback: string) =>
  process.argv.find((value) => value.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const sessions = Number(arg("sessions", "60"))
const turnsEach = Number(arg("turns", "5"))
const runnerCounts = arg("runners", "1,2,3").split(",").map(Number)
const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"

const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
)

/** CPU time (ms) a process used so far: this one's, or a child's from /proc. */
const cpuOf = (pid: number) => {
  if (pid === process.pid) {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10 // utime + stime, in 1/100 s
}

const spawnRunner = (url: string, port: number) =>
  Effect.acquireRelease(
    Effect.async<ChildProcess.ChildProcess, Error>((resume) => {
      const child = ChildProcess.spawn(
        process.execPath,
        [
          "--conditions=@parley/source",
          "--import",
          "tsx",
          path.join(import.meta.dirname, "runnerProcess.ts"),
          JSON.stringify({ url, port })
        ],
        { stdio: ["ignore", "ignore", "inherit", "ipc"], env: { ...process.env, NODE_OPTIONS: "" } }
      )
      child.on("message", () => resume(Effect.succeed(child)))
      child.on("exit", (code) => resume(Effect.fail(new Error(`a runner exited (${code})`))))
    }),
    (child) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.on("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

const schema = Effect.gen(function*() {
  const name = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
  const admin = Context.get(
    yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl), maxConnections: 1 })),
    PgClient.PgClient
  )
  yield* Effect.acquireRelease(
    admin`CREATE SCHEMA ${admin(name)}`,
    () => Effect.ignore(admin`DROP SCHEMA ${admin(name)} CASCADE`)
  )
  return `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${name}`)}`
})

const measure = (count: number) =>
  Effect.gen(function*() {
    const url = yield* schema
    const model = yield* ScriptedModel.fromFunction(brain)
    const context = yield* Layer.build(runner({ url, port: yield* freePort, model: model.languageModel }))
    const children = []
    for (let i = 1; i < count; i++) children.push(yield* spawnRunner(url, yield* freePort))
    // Until the shards are split (this runner's share holds for a second).
    const sharding = Context.get(context, Sharding.Sharding)
    const shards = Array.from({ length: 60 }, (_, i) => ShardId.make("default", i + 1))
    let last = -1
    for (let stable = 0; stable < 4;) {
      yield* Effect.sleep("250 millis")
      const held = shards.filter((shard) => sharding.hasShardId(shard)).length
      stable = held === last && (count === 1 || held < shards.length) ? stable + 1 : 0
      last = held
    }
    const loop = (rounds: number) =>
      Effect.forEach(Array.from({ length: sessions }), () =>
        Effect.gen(function*() {
          for (let i = 0; i < rounds; i++) {
            // A new session (a new tree) per turn: the brain decides from the whole conversation.
            const session = yield* Agent.startSession(agent)
            const turn = yield* Session.sendMessage(session, "What does the atlas cost?")
            const blocked = yield* Turn.result(turn)
            if (blocked._tag !== "Blocked") return yield* Effect.dieMessage(`not blocked: ${blocked._tag}`)
            yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
            const done = yield* Turn.result(turn)
            if (done._tag !== "Completed" || done.text !== "The atlas costs 129 EUR.") {
              return yield* Effect.dieMessage(`not completed: ${done._tag}`)
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
  yield* Console.log(`| runners | turns | seconds | turns/s | CPU ms per turn (this runner, others) |`)
  yield* Console.log(`|---|---|---|---|---|`)
  for (const count of runnerCounts) {
    const row = yield* measure(count)
    yield* Console.log(
      `| ${row.count} | ${row.turns} | ${row.seconds.toFixed(1)} | ${(row.turns / row.seconds).toFixed(1)} | ${
        row.cpu.map((ms) => ms.toFixed(2)).join(", ")
      } |`
    )
  }
}))
