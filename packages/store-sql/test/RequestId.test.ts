/**
 * An idempotent `sendMessage` on the durable runtime: a client that lost the answer to a send (its process, or the
 * engine's, restarted) sends again with the same request id and gets the same turn; the SQLite file holds one
 * `TurnQueued`. Two engines on one PostgreSQL database given the same id at once queue one turn (the loser of the
 * append re-reads the log, decides again and finds it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Session, Transport, Turn } from "@parley/core"
import { SqlRuntime, SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { Context, Effect, Layer, Schema } from "effect"
import { pgSchema, sqliteFile, storeOf } from "./databases.js"

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

describe("sendMessage with a request id, on SQL stores", () => {
  it.effect("sent again after a restart: the same turn and cursor, one TurnQueued in the file", () =>
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
      const queued = (yield* store.eventLog.read(first.sessionId, 0)).flatMap((event) =>
        event._tag === "TurnQueued" ? [[event.turnId, event.requestId]] : []
      )
      assert.deepStrictEqual(queued, [[first.turnId, requestId], [other.turnId, "another-request"]])
    }))

  it.effect(
    "two engines on one PostgreSQL get the same request id at once: one turn, the same TurnRef for both",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        // Each engine's model asks for the location: the first turn waits on its approval, the others queue.
        const engine = Effect.map(
          Layer.build(
            SqlRuntime.layerPg({ url, maxConnections: 4 }).pipe(
              Layer.provide(ScriptedModel.layerFunction(() => ScriptedModel.toolCall("get_location", {})))
            )
          ),
          (context) => Context.get(context, Transport.Transport)
        )
        const a = yield* engine
        const b = yield* engine
        const session = yield* a.createSession(assistant.spec)
        const rounds = Array.from({ length: 6 }, (_, i) => `race-${i}`)
        for (const requestId of rounds) {
          const [fromA, fromB] = yield* Effect.all([
            a.sendMessage(session.sessionId, "Where am I?", { requestId }),
            b.sendMessage(session.sessionId, "Where am I?", { requestId })
          ], { concurrency: 2 })
          assert.deepStrictEqual([fromB.turnId, fromB.cursor], [fromA.turnId, fromA.cursor], requestId)
        }
        const store = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 1 }))
        const queued = (yield* store.eventLog.read(session.sessionId, 0)).flatMap((event) =>
          event._tag === "TurnQueued" ? [event.requestId] : []
        )
        assert.deepStrictEqual(queued, rounds, "one TurnQueued per request id")
      }),
    { timeout: 60_000 }
  )

  it.effect("a malformed request id fails with InvalidId, and nothing is stored", () =>
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
      assert.deepStrictEqual(yield* store.eventLog.read(sessionId, 0), [])
    }))
})
