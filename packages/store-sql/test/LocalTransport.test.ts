import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Transport, Turn } from "@parley/core"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { ClientTool } from "@parley/tools"
import { Effect, Layer, Schema, Stream } from "effect"
import { sqliteFile } from "./databases.js"
import { runtime } from "./transports.js"

// The whole transport contract with the engine's log in a SQLite file (in PostgreSQL: LocalTransportPg.test.ts, a
// file of its own so that it runs alongside this one).
TransportSuite.suite(
  "LocalTransport on SqlStore.layerSqlite",
  runtime(Layer.unwrap(Effect.map(sqliteFile, (filename) => SqlStore.layerSqlite({ filename }))))
)

describe("LocalTransport on SqlStore.layerSqlite: the engine and the readers of its events", () => {
  const getLocation = ClientTool.make("get_location", {
    description: "Where the user is.",
    success: Schema.Struct({ city: Schema.String })
  })
  const agent = Agent.make({ name: "locator", model: "scripted", tools: [getLocation], permissionMode: "ask" })
  const brain = (call: ScriptedModel.Call): ScriptedModel.Reply =>
    ScriptedModel.toolResults(call).length === 0
      ? ScriptedModel.toolCall("get_location", {})
      : ScriptedModel.text("You are in Lyon.")

  it.effect("a reader that sees a CallbackOpened finds the callback open in the engine's snapshot", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const model = yield* ScriptedModel.fromFunction(brain)
      const seen: Array<string> = []
      yield* Effect.gen(function*() {
        const transport = yield* Transport.Transport
        const session = yield* Agent.startSession(agent)
        const turn = yield* Session.sendMessage(session, "Where am I?")
        // The app answers each callback by id as soon as its event comes, after asking the engine what is open.
        yield* Turn.events(turn).pipe(
          Stream.runForEach((event) =>
            Effect.gen(function*() {
              if (event._tag !== "CallbackOpened") return
              const snapshot = yield* transport.snapshot(session.id, turn.turnId)
              assert.include(snapshot.callbacks.map((callback) => callback.id), event.callback.id)
              seen.push(event.callback.kind)
              yield* Turn.answer(
                turn,
                event.callback.id,
                event.callback.kind === "approval"
                  ? new Answer.AllowApproval()
                  : Answer.ClientToolResult.success({ city: "Lyon" })
              )
            })
          )
        )
      }).pipe(Effect.provide(runtime(SqlStore.layerSqlite({ filename }))(model.languageModel, { runtimeTools: [] })))
      assert.deepStrictEqual(seen, ["approval", "client_tool"])
    }))
})
