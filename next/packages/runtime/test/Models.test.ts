import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, ParleyError } from "@parley/core"
import { Models } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"

describe("Models", () => {
  it.effect("byName resolves known names and names the known ones otherwise", () =>
    Effect.gen(function*() {
      const scripted = yield* ScriptedModel.make([])
      const models = Models.byName({ "model-a": scripted.languageModel })
      const found = yield* models.resolve(AgentSpec.make({ name: "a", model: "model-a" }))
      assert.strictEqual(found, scripted.languageModel)
      const error = yield* Effect.flip(models.resolve(AgentSpec.make({ name: "b", model: "model-b" })))
      assert.instanceOf(error, ParleyError.AgentInvalid)
      assert.deepStrictEqual(error.issues, ["no model named \"model-b\" (known: model-a)"])
    }))

  it.effect("orElse tries each resolver in order and keeps every resolver's reason", () =>
    Effect.gen(function*() {
      const first = yield* ScriptedModel.make([])
      const second = yield* ScriptedModel.make([])
      const models = Models.orElse(
        Models.byName({ "model-a": first.languageModel }),
        Models.byAgent({ helper: second.languageModel })
      )
      assert.strictEqual(yield* models.resolve(AgentSpec.make({ name: "x", model: "model-a" })), first.languageModel)
      assert.strictEqual(yield* models.resolve(AgentSpec.make({ name: "helper" })), second.languageModel)
      const error = yield* Effect.flip(models.resolve(AgentSpec.make({ name: "y", model: "model-z" })))
      assert.deepStrictEqual(error.issues, [
        "no model named \"model-z\" (known: model-a)",
        "no model for agent y (known: helper)"
      ])
    }))
})
