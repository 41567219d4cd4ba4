/**
 * An idempotent `sendMessage` on the durable runtime: a client that lost the answer to a send (its process, or the
 * engine's, restarted) sends again with the same request id and gets the same turn; the SQLite file holds one
 * `TurnQueued`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Session, Turn } from "@parley/core"
import { SqlRuntime, SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { Effect, Layer, Schema } from "effect"
import { sqliteFile, storeOf } from "./databases.js"

const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  success: Schema.Struct({ city: Schema.String, country: Schema.String }),
  annotations: ToolAnnotations.readOnly
})

// No handlers: the turn stops at its approval and waits there across the restart.
const assistant = Agent.make({
  name: "assistant",
  model: "mistral-large-latest",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  permissionMode: "ask"
})

const engine = (filename: string, script: ReadonlyArray<ScriptedModel.Reply>) =>
  SqlRuntime.layerSqlite({ filename }).pipe(Layer.provide(ScriptedModel.layer(script)))

describe("sendMessage with a request id, on SQLite", () => {
  it.scoped("sent again after a restart: the same turn and cursor, one TurnQueued in the file", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const requestId = "7f9c1c2e-3b1d-4a51-9d3e-0c6f2b8a4e11"
      // Engine A queues the turn, which blocks on its approval; then A stops (its layer is released).
      const first = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        const turn = yield* Session.sendMessage(session, "Where am I?", { requestId })
        const state = yield* Turn.result(turn)
        assert.strictEqual(state._tag, "Blocked")
        return turn
      }).pipe(Effect.provide(engine(filename, [ScriptedModel.toolCall("get_location", {})])))

      // Engine B over the same file: the retry (same id) is answered with A's turn; another id queues a new one.
      const { again, other } = yield* Effect.gen(function*() {
        const session = yield* Agent.session(assistant, first.sessionId)
        const again = yield* Session.sendMessage(session, "Where am I?", { requestId })
        const other = yield* Session.sendMessage(session, "And the weather?", { requestId: "another-request" })
        return { again, other }
      }).pipe(Effect.provide(engine(filename, [])))

      assert.deepStrictEqual([again.turnId, again.cursor], [first.turnId, first.cursor])
      assert.notStrictEqual(other.turnId, first.turnId)
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      const queued = (yield* store.read(first.sessionId, 0)).flatMap((event) =>
        event._tag === "TurnQueued" ? [[event.turnId, event.requestId]] : []
      )
      assert.deepStrictEqual(queued, [[first.turnId, requestId], [other.turnId, "another-request"]])
    }))

  it.scoped("a malformed request id fails with InvalidId, and nothing is stored", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { errors, sessionId } = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        const errors = []
        for (const requestId of ["", "has spaces", "x".repeat(129), "ünïcödé"]) {
          errors.push(yield* Effect.flip(Session.sendMessage(session, "Where am I?", { requestId })))
        }
        return { errors, sessionId: session.id }
      }).pipe(Effect.provide(engine(filename, [])))
      assert.deepStrictEqual(errors.map((error) => error._tag), ["InvalidId", "InvalidId", "InvalidId", "InvalidId"])
      assert.include(errors[1].message, "request id")
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      assert.deepStrictEqual(yield* store.read(sessionId, 0), [])
    }))
})
