/**
 * Deadlines: an unanswered approval is a denial, an unanswered client tool call a tool error; the agent's timeouts
 * set them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import { CallbackTimeouts } from "@parley/core/AgentSpec"
import * as Turn from "@parley/core/Turn"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/testing/TestClock"
import { assertOneResolution, logOf, ofTag, stateAs, toolCompleted, turnOf } from "./assertions.js"
import { assistant, brain, LOCATION, lyon, NO_LOCATION, policy } from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const expiry = (withModel: WithModel) =>
  describe("expiry", () => {
    it.effect("an unanswered approval expires after one hour and the model sees a denial", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback.kind, "approval")
          assert.isDefined(callback.expiresAt)
          if (callback.expiresAt !== undefined) {
            assert.strictEqual(
              Duration.toMillis(DateTime.distance(callback.openedAt, callback.expiresAt)),
              Duration.toMillis("1 hour")
            )
          }
          const turn = yield* turnOf(agent, blocked)
          yield* TestClock.adjust("59 minutes")
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* TestClock.adjust("1 minute")
          const final = yield* Turn.result(turn, { after: blocked })
          assert.strictEqual(stateAs(final, "Completed").text, NO_LOCATION)
          const events = yield* logOf(turn)
          assertOneResolution(events, callback.id, "expired")
          assert.isTrue(toolCompleted(events, "get_location").isFailure)
          // A denied call is never made: no client tool call was opened.
          assert.deepStrictEqual(ofTag(events, "CallbackOpened").map((event) => event.callback.kind), ["approval"])
        })))

    it.effect("an unanswered client tool call expires into a tool error", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant({ permissions: policy("allow") })
          const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback.kind, "client_tool")
          const turn = yield* turnOf(agent, blocked)
          yield* TestClock.adjust("1 hour")
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, NO_LOCATION)
          const events = yield* logOf(turn)
          assertOneResolution(events, callback.id, "expired")
          assert.isTrue(toolCompleted(events, "get_location").isFailure)
          const error = yield* Effect.flip(Turn.answer(turn, callback.id, lyon))
          assert.strictEqual(error._tag, "CallbackNotOpen")
        })))

    it.effect("the agent's timeouts set the deadline: an approval waits 5 minutes, not less", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant({ timeouts: new CallbackTimeouts({ approval: Duration.minutes(5) }) })
          const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback.kind, "approval")
          assert.isDefined(callback.expiresAt)
          if (callback.expiresAt !== undefined) {
            assert.strictEqual(
              Duration.toMillis(DateTime.distance(callback.openedAt, callback.expiresAt)),
              Duration.toMillis("5 minutes")
            )
          }
          const turn = yield* turnOf(agent, blocked)
          yield* TestClock.adjust("4 minutes")
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* TestClock.adjust("1 minute")
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, NO_LOCATION)
          const events = yield* logOf(turn)
          assertOneResolution(events, callback.id, "expired")
          assert.isTrue(toolCompleted(events, "get_location").isFailure)
        })))
  })
