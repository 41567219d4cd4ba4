/**
 * The cluster bench's resume phase: three runners (this process and two children) hold `trees` trees, half paused on
 * their approvals, half running a tool that takes ten minutes; one child is killed with SIGKILL. At the kill, every
 * paused tree of the killed runner is answered (through this process's `Transport`: the answer waits until another
 * runner holds the tree's shard); its running trees are woken by the wake-up singleton on their new runners, which
 * report the cut-off tool failed to the model. For each tree of the killed runner: the time from the kill to the
 * first event appended after it (its `at`, on this machine's clock), and every turn must end. Which runner holds a
 * tree is read from the cluster's lock table (`cluster_locks`: the bench's runners use it, not advisory locks).
 */
import { PgClient } from "@effect/sql-pg"
import { Agent, Answer, Session, Turn } from "@parley/core"
import type { Ids } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Context, DateTime, Effect, Layer, Redacted } from "effect"
import { EntityId, Sharding } from "effect/cluster"
import { cpuOf, freePort, schema, settled, spawnRunner } from "./processes.js"
import { agent, brain, runner, shardsPerGroup } from "./runner.js"

/** The value at quantile `q` of sorted numbers (nearest rank). */
const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]

export interface Row {
  readonly kind: string
  readonly trees: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

export const measureResume = (trees: number) =>
  Effect.gen(function*() {
    const url = yield* schema
    const model = yield* ScriptedModel.fromFunction(brain)
    const context = yield* Layer.build(runner({ url, port: yield* freePort, model: model.languageModel }))
    const victimPort = yield* freePort
    const victim = yield* spawnRunner(url, victimPort)
    const survivor = yield* spawnRunner(url, yield* freePort)
    const sharding = Context.get(context, Sharding.Sharding)
    yield* settled(sharding, 3, shardsPerGroup)
    const store = SessionStore.get(yield* Layer.build(Layer.orDie(SqlStore.layerPg({ url, maxConnections: 4 }))))
    const sql = Context.get(
      yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      PgClient.PgClient
    )

    // Half the trees paused on their approvals, half running `check_stock` (answered, their tool started).
    const made = yield* Effect.forEach(Array.from({ length: trees }, (_, i) => i % 2 === 0), (running) =>
      Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        const turn = yield* Session.sendMessage(
          session,
          running ? "Is the atlas in stock?" : "What does the atlas cost?"
        )
        const blocked = yield* Turn.result(turn)
        if (blocked._tag !== "Blocked") {
          return yield* Effect.die(new Error(`not blocked: ${blocked._tag}`))
        }
        const callbackId = blocked.callbacks[0].id
        if (running) {
          yield* Turn.answer(turn, callbackId, new Answer.AllowApproval())
        }
        return { running, turn, callbackId }
      }), { concurrency: 32 }).pipe(Effect.provide(context))
    const logOf = (treeId: Ids.SessionId) =>
      Effect.orDie(store.eventLog.read(treeId, 0))
    for (
      const tree of made.filter((tree) =>
        tree.running
      )
    ) {
      while (!(yield* logOf(tree.turn.sessionId)).some((event) => event._tag === "ToolExecutionStarted")) {
        yield* Effect.sleep("100 millis")
      }
    }

    // The killed runner's trees: those whose shard it holds the lock of.
    const locks = yield* Effect.orDie(
      sql<{ shard_id: string; address: string }>`SELECT shard_id, address FROM cluster_locks`
    )
    const holder = new Map(locks.map((lock) => [lock.shard_id, lock.address]))
    const victims = yield* Effect.forEach(
      made.filter((tree) =>
        holder.get(sharding.getShardId(EntityId.make(tree.turn.sessionId), "default").toString())?.endsWith(
          `:${victimPort}`
        )
      ),
      (tree) => Effect.map(logOf(tree.turn.sessionId), (events) => ({ ...tree, lastSeq: events.length - 1 }))
    )
    if (victims.length === 0) return yield* Effect.die(new Error("the killed runner held none of the trees"))

    const pids = [process.pid, survivor.pid ?? -1]
    const cpuBefore = pids.map(cpuOf)
    victim.kill("SIGKILL")
    const killedAt = Date.now()
    // Its paused trees answered at once; every turn of its trees ends.
    yield* Effect.forEach(
      victims.filter((tree) => !tree.running),
      (tree) => Turn.answer(tree.turn, tree.callbackId, new Answer.AllowApproval()),
      { concurrency: "unbounded", discard: true }
    ).pipe(Effect.provide(context))
    yield* Effect.forEach(victims, (tree) =>
      Effect.flatMap(Turn.result(tree.turn), (state) =>
        state._tag === "Completed" ? Effect.void : Effect.die(new Error(`not completed: ${state._tag}`))), {
      concurrency: 32,
      discard: true
    }).pipe(Effect.provide(context), Effect.timeout("180 seconds"), Effect.orDie)
    const recoveredIn = Date.now() - killedAt
    const cpu = pids.map((pid, i) =>
      cpuOf(pid) - cpuBefore[i]
    )

    const delays = yield* Effect.forEach(victims, (tree) =>
      Effect.map(logOf(tree.turn.sessionId), (events) => {
        const next = events.find((event) =>
          event.seq > tree.lastSeq
        )
        return {
          running: tree.running,
          ms: next === undefined ? Number.NaN : DateTime.toEpochMillis(next.at) - killedAt
        }
      }))
    const row = (kind: string, ms: ReadonlyArray<number>): Row => {
      const sorted = [...ms].sort((a, b) => a - b)
      return {
        kind,
        trees: sorted.length,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        max: sorted.at(-1) ?? 0
      }
    }
    return {
      rows: [
        row("paused (answered at the kill)", delays.filter((d) => !d.running).map((d) => d.ms)),
        row("running (woken by the singleton)", delays.filter((d) => d.running).map((d) => d.ms)),
        row("all", delays.map((d) => d.ms))
      ],
      trees,
      recoveredIn,
      cpu
    }
  }).pipe(Effect.scoped)
