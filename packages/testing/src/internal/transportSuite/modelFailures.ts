/**
 * A model that fails ends the turn `Failed` with a `ModelFailure`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as AiError from "effect/ai/AiError"
import * as Effect from "effect/Effect"
import * as ScriptedModel from "../../ScriptedModel.js"
import { logOf, stateAs, turnOf } from "./assertions.js"
import { answerAll, assistant, LOCATION, policy } from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const modelFailures = (withModel: WithModel) =>
  describe("model failures", () => {
    it.effect("a model call beyond the script ends the turn Failed with a ModelFailure", () =>
      withModel(ScriptedModel.make([]), (model) =>
        Effect.gen(function*() {
          const agent = assistant()
          const state = yield* Agent.run(agent, "Where am I?")
          const failed = stateAs(state, "Failed")
          assert.strictEqual(failed.error._tag, "ModelFailure")
          assert.strictEqual((yield* model.calls).length, 1)
          const events = yield* logOf(yield* turnOf(agent, failed))
          const last = events[events.length - 1]
          assert.strictEqual(last._tag, "TurnEnded")
          if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Failed")
        })))

    it.effect("a model step that fails with an AiError after a tool call ends the turn Failed", () =>
      withModel(
        ScriptedModel.make([
          ScriptedModel.reply({ toolCalls: [LOCATION] }),
          () =>
            Effect.fail(
              AiError.make({
                module: "Provider",
                method: "streamText",
                reason: new AiError.UnknownError({ description: "the provider is down" })
              })
            )
        ]),
        (model) =>
          Effect.gen(function*() {
            const state = yield* Agent.run(assistant({ permissions: policy("allow") }), "Where am I?").pipe(
              Effect.provide(answerAll())
            )
            const failed = stateAs(state, "Failed")
            assert.strictEqual(failed.error._tag, "ModelFailure")
            assert.include(failed.error.message, "the provider is down")
            yield* model.assertComplete
          })
      ))
  })
