/**
 * What the cluster bench's phases share: free ports, a fresh PostgreSQL schema, runner child processes
 * (`runnerProcess.ts`), their CPU time, and waiting until the runners split the shards.
 */
import { PgClient } from "@effect/sql-pg"
import { Ports } from "@parley/testing"
import { Context, Effect, Layer, Redacted } from "effect"
import type { Sharding } from "effect/cluster"
import { ShardId } from "effect/cluster"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/** A free port on 127.0.0.1 (below the ephemeral range: see `Ports`). */
export const freePort = Ports.one

export const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"

/** CPU time (ms) a process used so far: this one's, or a child's from /proc. */
export const cpuOf = (pid: number) => {
  if (pid === process.pid) {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10 // utime + stime, in 1/100 s
}

/** A runner child process, stopped with SIGTERM when the scope closes (unless it is dead already). */
export const spawnRunner = (url: string, port: number) =>
  Effect.acquireRelease(
    Effect.callback<ChildProcess.ChildProcess, Error>((resume) => {
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
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.on("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** A fresh schema of the PostgreSQL database (dropped with the scope); the URL returned selects it. */
export const schema = Effect.gen(function*() {
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

/** Until the shards are split: this runner's share holds for a second (all of them when it is alone). */
export const settled = (sharding: Sharding.Sharding["Service"], runners: number, shardsPerGroup: number) =>
  Effect.gen(function*() {
    const shards = Array.from({ length: shardsPerGroup }, (_, i) => ShardId.make("default", i + 1))
    let last = -1
    for (let stable = 0; stable < 4;) {
      yield* Effect.sleep("250 millis")
      const held = shards.filter((shard) => sharding.hasShardId(shard)).length
      stable = held === last && (runners === 1 || held < shards.length) ? stable + 1 : 0
      last = held
    }
  })
