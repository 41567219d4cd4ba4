import { assert, describe, it } from "@effect/vitest"
import { Agent, CallbackHandler } from "@parley/core"
import { SqlRuntime, SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { sqliteFile, storeOf } from "./databases.js"

// The README's "A taste" program, on the durable runtime in one line.
const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  success: Schema.Struct({ city: Schema.String, country: Schema.String }),
  annotations: ToolAnnotations.readOnly
})

const assistant = Agent.make({
  name: "assistant",
  model: "mistral-large-latest",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  permissionMode: "ask"
})

const Handlers = CallbackHandler.layer([
  CallbackHandler.allowReadOnly,
  { clientTool: ClientTool.answers(getLocation.answer(() => ({ city: "Lyon", country: "France" }))) }
])

const script = [ScriptedModel.toolCall("get_location", {}), ScriptedModel.text("You're in Lyon, France.")]

describe("SqlRuntime.layerSqlite", () => {
  it.effect("runs the README program on a SQLite file in a new folder, and the session stays in the file", () =>
    Effect.gen(function*() {
      const filename = path.join(path.dirname(yield* sqliteFile), "app", ".parley", "sessions.db")
      const Runtime = SqlRuntime.layerSqlite({ filename }).pipe(Layer.provide(ScriptedModel.layer(script)))
      const state = yield* Agent.run(assistant, "Where am I?").pipe(Effect.provide(Handlers), Effect.provide(Runtime))
      assert.strictEqual(state._tag, "Completed")
      assert.strictEqual(state._tag === "Completed" && state.text, "You're in Lyon, France.")
      assert.isTrue(fs.existsSync(filename))
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      const tree = yield* store.eventLog.getTree(state.sessionId)
      assert.strictEqual(Option.map(tree, (t) => t.agent.name).pipe(Option.getOrNull), "assistant")
      const events = yield* store.eventLog.read(state.sessionId, 0)
      assert.strictEqual(events[events.length - 1]?._tag, "TurnEnded")
    }))

  it.effect("a file that cannot be opened fails the runtime with a StoreError naming SqlStore.layerSqlite", () =>
    Effect.gen(function*() {
      const file = yield* sqliteFile
      fs.writeFileSync(file, "")
      const Runtime = SqlRuntime.layerSqlite({ filename: `${file}/sessions.db` }).pipe(
        Layer.provide(ScriptedModel.layer(script))
      )
      const error = yield* Effect.flip(
        Agent.run(assistant, "Where am I?").pipe(Effect.provide(Handlers), Effect.provide(Runtime))
      )
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "SqlStore.layerSqlite")
    }))
})
