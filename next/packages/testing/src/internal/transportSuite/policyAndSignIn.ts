/**
 * The permission policy (a denied tool is never called) and sign-ins (connected or denied).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import type { Kind } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Effect from "effect/Effect"
import * as ScriptedModel from "../../ScriptedModel.js"
import { logOf, ofTag, stateAs, toolCompleted, turnOf } from "./assertions.js"
import {
  allow,
  answerAll,
  assistant,
  brain,
  EMAIL,
  EMAIL_ABOUT,
  LOCATION,
  lyon,
  NO_EMAIL,
  NO_LOCATION,
  policy
} from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const policyAndSignIn = (withModel: WithModel) =>
  describe("policy and sign-in", () => {
    it.effect("deny: the tool is never called and the model gets a failure result", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const handled: Array<Kind> = []
          const agent = assistant({ permissions: policy("deny") })
          const state = yield* Agent.run(agent, "Where am I?").pipe(
            Effect.provide(CallbackHandler.layer({
              approval: (context) => {
                handled.push(context.callback.kind)
                return allow
              },
              clientTool: (callback) => {
                handled.push(callback.kind)
                return lyon
              }
            }))
          )
          assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
          assert.deepStrictEqual(handled, [])
          const events = yield* logOf(yield* turnOf(agent, stateAs(state, "Completed")))
          assert.deepStrictEqual(ofTag(events, "CallbackOpened"), [])
          assert.strictEqual(ofTag(events, "ToolCallStarted").length, 1)
          const completed = toolCompleted(events, "get_location")
          assert.isTrue(completed.isFailure)
          assert.strictEqual(completed.toolId, "client.get_location")
        })))

    it.effect("a connected sign-in runs the connector tool and the model sees the email", () =>
      withModel(brain([EMAIL]), (model) =>
        Effect.gen(function*() {
          const agent = assistant()
          const state = yield* Agent.run(agent, "What is my latest email about?").pipe(
            Effect.provide(answerAll("connected"))
          )
          const completed = stateAs(state, "Completed")
          assert.strictEqual(completed.text, EMAIL_ABOUT)
          const events = yield* logOf(yield* turnOf(agent, completed))
          assert.deepStrictEqual(ofTag(events, "CallbackOpened").map((event) => event.callback.kind), ["sign_in"])
          const email = toolCompleted(events, "gmail_latest_email")
          assert.isFalse(email.isFailure)
          assert.strictEqual(email.toolId, "connector.gmail.latest_email")
          assert.strictEqual((email.result as { readonly subject: string }).subject, "Dinner on Friday?")
          const calls = yield* model.calls
          const seen = ScriptedModel.toolResults(calls[calls.length - 1])
          assert.strictEqual(seen.length, 1)
          assert.isFalse(seen[0].isFailure)
        })))

    it.effect("a denied sign-in gives the model a tool error", () =>
      withModel(brain([EMAIL]), (model) =>
        Effect.gen(function*() {
          const agent = assistant()
          const state = yield* Agent.run(agent, "What is my latest email about?").pipe(
            Effect.provide(answerAll("denied"))
          )
          const completed = stateAs(state, "Completed")
          assert.strictEqual(completed.text, NO_EMAIL)
          const events = yield* logOf(yield* turnOf(agent, completed))
          assert.isTrue(toolCompleted(events, "gmail_latest_email").isFailure)
          const calls = yield* model.calls
          const seen = ScriptedModel.toolResults(calls[calls.length - 1])
          assert.deepStrictEqual(seen.map((result) => result.isFailure), [true])
        })))
  })
