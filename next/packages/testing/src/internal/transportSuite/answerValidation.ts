/**
 * `Turn.answer` fails with a typed error and stores nothing when the answer does not fit, is late or comes twice.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import { newCallbackId } from "@parley/core/Ids"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { assertOneResolution, kinds, logOf, stateAs, turnOf } from "./assertions.js"
import { allow, answerFor, assistant, brain, EMAIL, EMAIL_ABOUT, IN_LYON, LOCATION, lyon, policy } from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const answerValidation = (withModel: WithModel) =>
  describe("answer validation", () => {
    /** A turn blocked on one client tool call (the policy allows get_location). */
    const blockedOnClientTool = Effect.gen(function*() {
      const agent = assistant({ permissions: policy("allow") })
      const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
      assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
      return { blocked, turn: yield* turnOf(agent, blocked), callback: blocked.callbacks[0] }
    })

    it.effect("an approval answer to a client tool call fails with AnswerMismatch and stores nothing", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          const error = yield* Effect.flip(Turn.answer(turn, callback.id, allow))
          assert.strictEqual(error._tag, "AnswerMismatch")
          if (error._tag === "AnswerMismatch") assert.strictEqual(error.callbackId, callback.id)
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, lyon)
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))

    it.effect("a client tool result that does not match the success schema fails with AnswerMismatch", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          for (const wrong of [{ city: "Lyon" }, { city: "Lyon", country: 33 }, "Lyon, France"]) {
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, Answer.ClientToolResult.success(wrong)))
            assert.strictEqual(error._tag, "AnswerMismatch", JSON.stringify(wrong))
          }
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, lyon)
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))

    it.effect("a SignInAnswer that omits a requested source fails with AnswerMismatch", () =>
      withModel(brain([EMAIL]), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(yield* Agent.run(agent, "What is my latest email about?"), "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback._tag, "OpenSignIn")
          if (callback._tag !== "OpenSignIn") return
          assert.deepStrictEqual(callback.requests.map((request) => request.source), ["gmail"])
          const turn = yield* turnOf(agent, blocked)
          const error = yield* Effect.flip(Turn.answer(turn, callback.id, new Answer.SignInAnswer({})))
          assert.strictEqual(error._tag, "AnswerMismatch")
          const wrongKind = yield* Effect.flip(Turn.answer(turn, callback.id, allow))
          assert.strictEqual(wrongKind._tag, "AnswerMismatch")
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, answerFor(callback, "connected"))
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, EMAIL_ABOUT)
          assertOneResolution(yield* logOf(turn), callback.id, "answered")
        })))

    it.effect("an unknown callback id fails with CallbackNotOpen", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          const unknown = yield* newCallbackId
          const error = yield* Effect.flip(Turn.answer(turn, unknown, lyon))
          assert.strictEqual(error._tag, "CallbackNotOpen")
          if (error._tag === "CallbackNotOpen") assert.strictEqual(error.callbackId, unknown)
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, lyon)
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          const events = yield* logOf(turn)
          assert.isFalse(events.some((event) => event._tag === "CallbackResolved" && event.callbackId === unknown))
        })))

    it.effect("a second answer fails with CallbackAlreadyAnswered; the first one stands", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          yield* Turn.answer(turn, callback.id, lyon)
          const paris = Answer.ClientToolResult.success({ city: "Paris", country: "France" })
          const error = yield* Effect.flip(Turn.answer(turn, callback.id, paris))
          assert.strictEqual(error._tag, "CallbackAlreadyAnswered")
          // The error carries the answer that won.
          if (error._tag === "CallbackAlreadyAnswered") assert.deepStrictEqual(error.answer, lyon)
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          const again = yield* Effect.flip(Turn.answer(turn, callback.id, paris))
          assert.strictEqual(again._tag, "CallbackAlreadyAnswered")
          const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))
  })
