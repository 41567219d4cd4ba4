/**
 * What `Blocked` lists, and where `Turn.result({ after })` continues.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Turn from "@parley/core/Turn"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import { kinds, ofTag, stateAs, turnOf } from "./assertions.js"
import {
  allow,
  answerFor,
  assistant,
  concurrent,
  IN_LYON,
  lyon,
  NO_EMAIL,
  sequential,
  signInAnswer
} from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const blocked = (withModel: WithModel) =>
  describe("Blocked and after", () => {
    it.effect("Blocked lists only what the handlers left open; after continues without asking them again", () =>
      withModel(concurrent(), () =>
        Effect.gen(function*() {
          const handled: Array<string> = []
          const record = <A>(callback: Callback, answer: A) => {
            handled.push(callback.id)
            return answer
          }
          const handlers = CallbackHandler.layer({
            approval: (context) => record(context.callback, allow),
            clientTool: (callback) => record(callback, new Answer.KeepCallbackOpen()),
            signIn: (callback) => record(callback, signInAnswer(callback, "denied"))
          })
          const agent = assistant()
          const state = yield* Agent.run(agent, "Where am I, and what is my latest email about?").pipe(
            Effect.provide(handlers)
          )
          const blocked = stateAs(state, "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
          assert.strictEqual(handled.length, 3)
          const turn = yield* turnOf(agent, blocked)
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((callback) => callback.id), [
            blocked.callbacks[0].id
          ])
          yield* Turn.answer(turn, blocked.callbacks[0].id, lyon)
          const final = yield* Turn.result(turn, { after: blocked }).pipe(Effect.provide(handlers))
          assert.strictEqual(stateAs(final, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
          // Each callback went to the handlers once: `after` skipped the ones before the cursor.
          assert.strictEqual(handled.length, 3)
          assert.strictEqual(new Set(handled).size, 3)
          assert.isTrue(handled.includes(blocked.callbacks[0].id))
        })))

    it.effect("Turn.result({ after }) only reports events from the cursor on", () =>
      withModel(sequential(), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(
            yield* Agent.run(agent, "Where am I, and what is my latest email about?"),
            "Blocked"
          )
          assert.deepStrictEqual(kinds(blocked.callbacks), ["sign_in"])
          const turn = yield* turnOf(agent, blocked)
          yield* Turn.answer(turn, blocked.callbacks[0].id, answerFor(blocked.callbacks[0]))
          const seen: Array<TurnEvent> = []
          const next = yield* Turn.result(turn, { after: blocked, onEvent: (event) => void seen.push(event) })
          assert.deepStrictEqual(kinds(stateAs(next, "Blocked").callbacks), ["approval"])
          assert.isTrue(seen.length > 0)
          assert.isTrue(seen.every((event) => event.seq >= blocked.cursor))
          assert.strictEqual(seen[0].seq, blocked.cursor)
          assert.deepStrictEqual(
            ofTag(seen, "CallbackOpened").map((event) => event.callback.kind),
            ["approval"]
          )
        })))
  })
