/**
 * `Session.cancel` ends a blocked turn `Cancelled`, resolves its callbacks `cancelled`, and wakes its readers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { assertOneResolution, logOf, ofTag, sortedKinds, stateAs } from "./assertions.js"
import { answerFor, assistant, concurrent } from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const cancel = (withModel: WithModel) =>
  describe("cancel", () => {
    it.effect("Session.cancel ends a blocked turn Cancelled and resolves its callbacks cancelled", () =>
      withModel(concurrent(), (model) =>
        Effect.gen(function*() {
          const agent = assistant()
          const session = yield* Agent.startSession(agent)
          const blocked = stateAs(
            yield* Session.run(session, "Where am I, and what is my latest email about?"),
            "Blocked"
          )
          assert.deepStrictEqual(sortedKinds(blocked.callbacks), ["approval", "sign_in"])
          const turn = yield* Session.turn(session, blocked.turnId)
          yield* Session.cancel(session)
          const final = yield* Turn.result(turn, { after: blocked })
          stateAs(final, "Cancelled")
          assert.strictEqual(final.turnId, blocked.turnId)
          const events = yield* logOf(turn)
          for (const callback of blocked.callbacks) assertOneResolution(events, callback.id, "cancelled")
          const last = events[events.length - 1]
          assert.strictEqual(last._tag, "TurnEnded")
          if (last._tag === "TurnEnded") assert.strictEqual(last.state._tag, "Cancelled")
          // Nothing ran after the cancel: each unfinished tool call gets a failure result (the conversation stays
          // whole for the model), no tool ran, and the model was not called again.
          const completed = ofTag(events, "ToolCallCompleted")
          assert.deepStrictEqual(completed.map((event) => [event.name, event.isFailure]).sort(), [
            ["get_location", true],
            ["gmail_latest_email", true]
          ])
          for (const event of completed) assert.include(String(event.result), "cancelled")
          assert.isTrue(completed.every((event) => event.seq > blocked.cursor))
          assert.strictEqual((yield* model.calls).length, 1)
          assert.deepStrictEqual(yield* Turn.openCallbacks(turn), [])
          const error = yield* Effect.flip(
            Turn.answer(turn, blocked.callbacks[0].id, answerFor(blocked.callbacks[0]))
          )
          assert.strictEqual(error._tag, "CallbackNotOpen")
        })))

    it.effect("a Turn.result waiting when the session is cancelled returns Cancelled, not a stale Blocked", () =>
      withModel(concurrent(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const blocked = stateAs(
            yield* Session.run(session, "Where am I, and what is my latest email about?"),
            "Blocked"
          )
          const turn = yield* Session.turn(session, blocked.turnId)
          // Another client waits on the turn from the Blocked state (as an app does while a person decides).
          const waiter = yield* Effect.forkChild(Turn.result(turn, { after: blocked }))
          yield* Effect.yieldNow
          yield* Session.cancel(session)
          const state = yield* Fiber.join(waiter)
          stateAs(state, "Cancelled")
          // Once the cancel began, nothing may report the turn blocked again: its callbacks close, its unfinished
          // tool calls get their (failed) results, and it ends.
          const events = yield* logOf(turn)
          assert.deepStrictEqual(
            events.filter((event) => event.seq >= blocked.cursor).map((event) => event._tag),
            [
              "CancelRequested",
              "CallbackResolved",
              "CallbackResolved",
              "ToolCallCompleted",
              "ToolCallCompleted",
              "TurnEnded"
            ]
          )
        })))
  })
