import { assert, describe, it } from "@effect/vitest"
import { Answer, Ids, Inbox } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "../databases.js"
import { readLedger } from "../fixtures/agents.js"
import type { Message } from "../fixtures/blockedTurnProcess.js"
import type { StoreConfig } from "../fixtures/child.js"
import { expect, spawn } from "./children.js"
import { check, readTree } from "./invariants.js"

// Issue 9: an answer from another process. Process A (a child) runs a turn that blocks on an approval; this process,
// with an engine of its own over the same store that runs no work (runsWork: false), lists the open callbacks
// (Inbox.listOpen, with the JSON Schema of the answer each expects) and answers by id (Inbox.answer). A notices,
// runs the tool (the ledger says: in A) and completes the turn; it reports what it observed.

const crossProcess = (config: StoreConfig, store: SessionStore.Services) =>
  Effect.gen(function*() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "parley-cross-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true })))
    const ledger = path.join(directory, "ledger.jsonl")
    const started = Date.now()
    const a = yield* spawn<Message>("A", "blockedTurnProcess.ts", {
      store: config,
      owner: "cross-a",
      ledger,
      label: "x1"
    })
    const blocked = yield* expect(a, "Blocked")
    assert.strictEqual(blocked.callbacks.length, 1)
    assert.strictEqual(blocked.callbacks[0].kind, "approval")

    // B: this process, its own engine over the store; it runs no work.
    const b = yield* Layer.build(
      LocalTransport.layerWith({ owner: "cross-b", runsWork: false }).pipe(
        Layer.provide([
          SessionStore.layer(store),
          Connectors.layerEmpty,
          RuntimeTools.layerEmpty,
          Models.layer(Models.byAgent({}))
        ])
      )
    )
    const open = yield* Inbox.listOpen().pipe(Effect.provide(b))
    assert.deepStrictEqual(open.map((entry) => entry.callback.id), [blocked.callbacks[0].id])
    const [approval] = open
    assert.strictEqual(approval.callback.sessionId, blocked.sessionId)
    assert.strictEqual(approval.callback.turnId, blocked.turnId)
    assert.strictEqual(
      approval.callback._tag === "OpenApproval" ? approval.callback.request.tool.id : "",
      "client.lookup_price"
    )
    // The JSON Schema of the answer it expects: allow, or deny with an optional reason.
    const schema = JSON.stringify(approval.answerSchema)
    assert.include(schema, `"enum":["AllowApproval"]`)
    assert.include(schema, `"enum":["DenyApproval"]`)
    assert.include(schema, `"reason"`)
    assert.deepStrictEqual(
      (yield* Inbox.listOpen({ sessionId: Ids.SessionId.make(blocked.sessionId), kind: "approval" }).pipe(
        Effect.provide(b)
      )).length,
      1
    )

    yield* Inbox.answer(approval, new Answer.AllowApproval()).pipe(Effect.provide(b))
    const ended = yield* expect(a, "Ended", { timeout: "30 seconds" })
    assert.strictEqual(ended.state, "Completed")
    assert.strictEqual(ended.text, "The Atlas costs 1,200 EUR.")
    // What A followed (the stored events; the streamed deltas aside), after the approval opened.
    assert.deepStrictEqual(ended.observed.filter((tag) => tag !== "MessageDelta").slice(-6), [
      "CallbackResolved",
      "ToolExecutionStarted",
      "ToolCallCompleted",
      "ModelStepStarted",
      "MessageCompleted",
      "TurnEnded"
    ])
    // A second answer, from B again, is refused: the callback was answered.
    const again = yield* Effect.flip(Inbox.answer(approval, new Answer.DenyApproval({})).pipe(Effect.provide(b)))
    assert.strictEqual(again._tag, "CallbackAlreadyAnswered")
    assert.deepStrictEqual(yield* Inbox.listOpen().pipe(Effect.provide(b)), [])

    yield* a.send({ _tag: "Stop" })
    assert.strictEqual((yield* a.exit).code, 0, a.output())
    // The tool ran once, in A (the process that owns the tree), not in B.
    const executions = readLedger(ledger)
    assert.deepStrictEqual(executions.map((line) => [line.toolCallId, line.pid]), [["x1.pricer.lookup", a.pid]])
    const tree = yield* readTree(store, blocked.sessionId)
    assert.deepStrictEqual(check([tree], executions).problems, [])
    console.log(`cross-process test (${config._tag}): answered from the test process; ${Date.now() - started} ms`)
  })

describe("Cross-process: a turn in one process answered from another", { concurrent: false }, () => {
  it.live("on a SQLite file", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      yield* crossProcess({ _tag: "sqlite", filename }, store)
    }), { timeout: 60_000 })

  it.live("on PostgreSQL", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const store = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 4 }))
      yield* crossProcess({ _tag: "pg", url }, store)
    }), { timeout: 60_000 })
})
