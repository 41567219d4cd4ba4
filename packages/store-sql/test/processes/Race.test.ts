import { assert, describe, it } from "@effect/vitest"
import type { SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "../databases.js"
import { readLedger } from "../fixtures/agents.js"
import type { StoreConfig } from "../fixtures/child.js"
import type { Args, Message, Outcome } from "../fixtures/raceProcess.js"
import { expect, spawn } from "./children.js"
import { check, isDone, readTree } from "./invariants.js"

// Issue 9: two processes answer the same 1,000 open approvals at once, each with its own engine over the same store.
// Process A owns the trees (it started them: 20 sessions whose model calls `note` 50 times in one step, each call
// waiting on an approval) and allows; process B (runsWork: false) denies. Both list the approvals, then answer all of
// them as fast as they can. Exactly one answer wins for each callback; the other gets `CallbackAlreadyAnswered`; the
// log holds exactly one `CallbackResolved` per callback, with the winner's answer; the notes A allowed run once each
// (the ledger), the denied ones never, and every turn completes.

const SESSIONS = 20
const NOTES = 50
const CALLBACKS = SESSIONS * NOTES

const race = (
  config: StoreConfig,
  store: SessionStore.Services
) =>
  Effect.gen(function*() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "parley-race-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true })))
    const ledger = path.join(directory, "ledger.jsonl")
    const argsOf = (owner: string, fields: Partial<Args>): Args => ({
      store: config,
      owner,
      runsWork: true,
      ledger,
      answer: "allow",
      concurrency: 64,
      ...fields
    })
    const started = Date.now()
    const [a, b] = yield* Effect.all([
      spawn<Message>("A", "raceProcess.ts", argsOf("race-a", { setup: { sessions: SESSIONS, notes: NOTES } })),
      spawn<Message>("B", "raceProcess.ts", argsOf("race-b", { runsWork: false, answer: "deny" }))
    ])
    const [{ treeIds }] = yield* Effect.all([expect(a, "Ready", { timeout: "90 seconds" }), expect(b, "Ready")], {
      concurrency: 2
    })
    assert.strictEqual(treeIds.length, SESSIONS)
    const setUp = Date.now() - started

    // Both list the approvals (with the JSON Schema of the answer each expects), then race.
    yield* Effect.all([a.send({ _tag: "List" }), b.send({ _tag: "List" })], { concurrency: 2 })
    const listed = yield* Effect.all([expect(a, "Listed"), expect(b, "Listed")], { concurrency: 2 })
    for (const { answerSchemas, callbacks } of listed) {
      assert.strictEqual(callbacks, CALLBACKS)
      assert.strictEqual(answerSchemas.length, 1)
      assert.include(answerSchemas[0], `"enum":["AllowApproval"]`)
      assert.include(answerSchemas[0], `"enum":["DenyApproval"]`)
    }
    yield* Effect.all([a.send({ _tag: "Go" }), b.send({ _tag: "Go" })], { concurrency: 2 })
    const [resultA, resultB] = yield* Effect.all([expect(a, "Result"), expect(b, "Result")], { concurrency: 2 })

    // Exactly one answer won for each callback; the other got CallbackAlreadyAnswered, for that callback.
    const byCallback = new Map<string, { a?: Outcome; b?: Outcome }>()
    for (const outcome of resultA.outcomes) byCallback.set(outcome.callbackId, { a: outcome })
    for (const outcome of resultB.outcomes) {
      byCallback.set(outcome.callbackId, { ...byCallback.get(outcome.callbackId), b: outcome })
    }
    assert.strictEqual(byCallback.size, CALLBACKS)
    const unexpected: Array<string> = []
    const won = new Map<string, "A" | "B">()
    for (const [callbackId, { a: fromA, b: fromB }] of byCallback) {
      const winners = [fromA, fromB].filter((outcome) => outcome?.outcome === "won")
      const loser = fromA?.outcome === "won" ? fromB : fromA
      if (winners.length !== 1) unexpected.push(`${callbackId}: ${winners.length} answers won`)
      else if (loser?.outcome !== "CallbackAlreadyAnswered" || !loser.detail?.startsWith(`${callbackId}:`)) {
        unexpected.push(`${callbackId}: the losing answer got ${loser?.outcome} (${loser?.detail})`)
      } else won.set(callbackId, fromA?.outcome === "won" ? "A" : "B")
    }
    assert.deepStrictEqual(unexpected.slice(0, 10), [], `${unexpected.length} callbacks without exactly one winner`)

    // The turns complete: A runs the notes it allowed; the model then counts what was written and refused.
    const trees = yield* Effect.gen(function*() {
      const deadline = Date.now() + 60_000
      while (true) {
        const all = yield* Effect.forEach(treeIds, (treeId) => readTree(store, treeId))
        if (all.every(isDone)) return all
        if (Date.now() > deadline) return assert.fail(`turns not done after 60 s:\n${a.output()}`)
        yield* Effect.sleep("100 millis")
      }
    })
    yield* Effect.all([a.send({ _tag: "Stop" }), b.send({ _tag: "Stop" })], { concurrency: 2 })
    assert.strictEqual((yield* a.exit).code, 0, a.output())
    assert.strictEqual((yield* b.exit).code, 0, b.output())

    // The log: one CallbackResolved per callback, answered with the winner's answer.
    const resolutions = trees.flatMap((tree) =>
      tree.events.flatMap((event) => event._tag === "CallbackResolved" ? [event] : [])
    )
    assert.strictEqual(resolutions.length, CALLBACKS)
    for (const resolution of resolutions) {
      const winner = won.get(resolution.callbackId)
      assert.strictEqual(resolution.resolution, "answered")
      assert.strictEqual(
        resolution.answer?._tag,
        winner === "A" ? "AllowApproval" : "DenyApproval",
        resolution.callbackId
      )
    }
    const findings = check(trees, readLedger(ledger))
    assert.deepStrictEqual(findings.problems, [])
    const allowed = [...won.values()].filter((winner) => winner === "A").length
    assert.strictEqual(findings.executions, allowed, "each allowed note ran once, no denied one ran")
    const texts = trees.flatMap((tree) =>
      tree.events.flatMap((event) =>
        event._tag === "TurnEnded" && event.state._tag === "Completed" ? [event.state.text] : []
      )
    )
    assert.strictEqual(texts.length, SESSIONS)
    console.log(
      `race test (${config._tag}): ${CALLBACKS} callbacks in ${SESSIONS} sessions; A (owner) won ${allowed}, ` +
        `B (runsWork: false) won ${CALLBACKS - allowed}; answering took ${resultA.millis} ms (A) and ` +
        `${resultB.millis} ms (B); set-up ${setUp} ms, total ${Date.now() - started} ms`
    )
  })

describe("Race: two processes answer the same 1,000 callbacks", { concurrent: false }, () => {
  it.live("on a SQLite file", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      yield* race({ _tag: "sqlite", filename }, store)
    }), { timeout: 180_000 })

  it.live("on PostgreSQL", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const store = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 4 }))
      yield* race({ _tag: "pg", url }, store)
    }), { timeout: 180_000 })
})
