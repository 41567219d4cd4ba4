/**
 * Append throughput and latency of the SQL store: one tree appending alone, and 100 trees appending at once (group
 * commit). Each append is a typical decision of the engine: three events.
 *
 *   node --import tsx packages/store-sql/bench/appends.ts            # SQLite (FULL and NORMAL) and PostgreSQL
 *   PARLEY_TEST_PG_URL=postgres://… node --import tsx packages/store-sql/bench/appends.ts
 */
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { FileSystem } from "effect"
import { Context, DateTime, Effect, Layer, Redacted } from "effect"

const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"
const at = DateTime.makeUnsafe(0)

const decision = (treeId: Ids.SessionId, seq: number): ReadonlyArray<TurnEvent.TurnEvent> => {
  const turnId = Ids.TurnId.make("turn_bench")
  return [
    new TurnEvent.ToolCallStarted({
      sessionId: treeId,
      turnId,
      seq,
      at,
      toolCallId: `call_${seq}`,
      toolId: Ids.ToolId.make("client.get_location"),
      name: "get_location",
      arguments: { precision: "city" }
    }),
    new TurnEvent.ModelStepStarted({ sessionId: treeId, turnId, seq: seq + 1, at, messageId: `msg_${seq}`, step: 1 }),
    new TurnEvent.MessageCompleted({
      sessionId: treeId,
      turnId,
      seq: seq + 2,
      at,
      messageId: `msg_${seq}`,
      text: "You are in Lyon, France."
    })
  ]
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

const run = (store: SessionStore.Services, trees: number, appendsPerTree: number) =>
  Effect.gen(function*() {
    const ids = Array.from({ length: trees }, (_, i) => Ids.SessionId.make(`ses_bench_${trees}_${i}`))
    yield* Effect.forEach(ids, (treeId) =>
      store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at }), {
      concurrency: "unbounded"
    })
    // The events are built before the clock starts: the benchmark times the store, not the events' constructors.
    const decisions = ids.map((treeId) =>
      Array.from({ length: appendsPerTree }, (_, i) =>
        decision(treeId, i * 3))
    )
    const latencies: Array<number> = []
    const start = performance.now()
    yield* Effect.forEach(
      ids,
      (treeId, j) =>
        Effect.gen(function*() {
          for (let i = 0; i < appendsPerTree; i++) {
            const t0 = performance.now()
            yield* store.eventLog.append(treeId, i * 3, decisions[j][i])
            latencies.push(performance.now() - t0)
          }
        }),
      { concurrency: "unbounded" }
    )
    const seconds = (performance.now() - start) / 1000
    latencies.sort((a, b) => a - b)
    return {
      trees,
      appends: latencies.length,
      perSecond: Math.round(latencies.length / seconds),
      p50: percentile(latencies, 0.5).toFixed(2),
      p99: percentile(latencies, 0.99).toFixed(2)
    }
  })

const bench = (name: string, layer: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = SessionStore.get(yield* Layer.build(layer))
    for (const [trees, appends] of [[1, 2000], [100, 50]] as const) {
      const result = yield* run(store, trees, appends)
      console.log(
        `${name.padEnd(22)} ${String(trees).padStart(3)} tree(s): ${
          String(result.perSecond).padStart(6)
        } appends/s, p50 ${result.p50} ms, p99 ${result.p99} ms (${result.appends} appends)`
      )
    }
  }))

const sqlite = (synchronous: "full" | "normal") =>
  Layer.unwrap(
    Effect.map(
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "parley-bench-" })),
      (directory) => SqlStore.layerSqlite({ filename: `${directory}/bench.db`, synchronous })
    )
  ).pipe(Layer.provide(NodeFileSystem.layer))

const pg = Layer.unwrap(Effect.gen(function*() {
  const admin = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl) })), PgClient.PgClient)
  const schema = `bench_${Date.now()}`
  yield* Effect.acquireRelease(
    admin`CREATE SCHEMA ${admin(schema)}`,
    () => Effect.ignore(admin`DROP SCHEMA ${admin(schema)} CASCADE`)
  )
  const url = `${pgUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return SqlStore.layerPg({ url })
}))

Effect.runPromise(
  Effect.gen(function*() {
    yield* bench("SQLite, synchronous=FULL", sqlite("full"))
    yield* bench("SQLite, synchronous=NORMAL", sqlite("normal"))
    yield* bench("PostgreSQL", pg)
  })
).catch((error) => {
  console.error(error)
  process.exit(1)
})
