/**
 * Every way of driving a session (`Agent.run` with handlers, `Blocked` answered by id, `Turn.result({ onEvent })`,
 * `Turn.events` by hand), and several readers of one turn.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import type { Kind } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as ScriptedModel from "../../ScriptedModel.js"
import { assertOneResolution, ofTag, sortedKinds, stateAs, turnOf } from "./assertions.js"
import {
  answerAll,
  answerFor,
  assistant,
  brain,
  concurrent,
  EMAIL_ABOUT,
  IN_LYON,
  LOCATION,
  lyon,
  NO_EMAIL,
  policy,
  sequential,
  signInAnswer
} from "./fixtures.js"
import type { WithModel } from "./harness.js"

export const driving = (
  withModel: WithModel,
  liveDeltas: "every reader" | "the tree's process" = "every reader"
): void => {
  describe("driving a session", () => {
    it.effect("Agent.run with handlers for every kind completes", () =>
      withModel(concurrent(), (model) =>
        Effect.gen(function*() {
          const state = yield* Agent.run(assistant(), "Where am I, and what is my latest email about?").pipe(
            Effect.provide(answerAll("denied"))
          )
          const completed = stateAs(state, "Completed")
          assert.strictEqual(completed.text, `${NO_EMAIL} ${IN_LYON}`)
          const calls = yield* model.calls
          assert.strictEqual(calls.length, 2)
          // The model is offered exactly the client tool and the connector's tool.
          assert.deepStrictEqual([...ScriptedModel.toolNames(calls[0])].sort(), [
            "get_location",
            "gmail_latest_email"
          ])
        })))

    it.effect("a run without handlers returns Blocked; answers by id and Turn.result({ after }) finish it", () =>
      withModel(concurrent(), () =>
        Effect.gen(function*() {
          const agent = assistant()
          let state = yield* Agent.run(agent, "Where am I, and what is my latest email about?")
          const first = stateAs(state, "Blocked")
          const turn = yield* turnOf(agent, first)
          assert.strictEqual(turn.turnId, first.turnId)
          const rounds: Array<ReadonlyArray<Kind>> = []
          while (state._tag === "Blocked") {
            assert.strictEqual(state.sessionId, first.sessionId)
            assert.strictEqual(state.turnId, first.turnId)
            rounds.push(sortedKinds(state.callbacks))
            for (const callback of state.callbacks) {
              yield* Turn.answer(turn, callback.id, answerFor(callback))
            }
            state = yield* Turn.result(turn, { after: state })
          }
          assert.deepStrictEqual(rounds, [["approval", "sign_in"], ["client_tool"]])
          assert.strictEqual(stateAs(state, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
        })))

    it.effect("Turn.result({ onEvent }) shows the events while the handlers answer", () =>
      withModel(sequential(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const turn = yield* Session.sendMessage(session, "Where am I, and what is my latest email about?")
          const seen: Array<TurnEvent> = []
          const state = yield* Turn.result(turn, { onEvent: (event) => void seen.push(event) }).pipe(
            Effect.provide(answerAll("denied"))
          )
          assert.strictEqual(stateAs(state, "Completed").text, `${NO_EMAIL} ${IN_LYON}`)
          assert.deepStrictEqual(
            ofTag(seen, "CallbackOpened").map((event) => event.callback.kind),
            ["sign_in", "approval", "client_tool"]
          )
          // The turn's events start where it was accepted (TurnQueued), then it starts.
          assert.deepStrictEqual(seen.slice(0, 2).map((event) => event._tag), ["TurnQueued", "TurnStarted"])
          const last = seen[seen.length - 1]
          assert.strictEqual(last._tag, "TurnEnded")
          if (last._tag === "TurnEnded") assert.deepStrictEqual(last.state, state)
          // Every callback the handlers saw was answered, and nothing was left open.
          assert.strictEqual(ofTag(seen, "CallbackResolved").length, 3)
          assert.isTrue(ofTag(seen, "CallbackResolved").every((event) => event.resolution === "answered"))
        })))

    it.effect("Turn.events by hand: answer each CallbackOpened by id; handlers in context never answer", () =>
      withModel(sequential(), () =>
        Effect.gen(function*() {
          const handled: Array<Kind> = []
          const session = yield* Agent.startSession(assistant())
          const turn = yield* Session.sendMessage(session, "Where am I, and what is my latest email about?")
          const answered: Array<Kind> = []
          const events = yield* Turn.events(turn).pipe(
            Stream.tap((event) => {
              if (event._tag !== "CallbackOpened") return Effect.void
              answered.push(event.callback.kind)
              return Turn.answer(turn, event.callback.id, answerFor(event.callback, "connected"))
            }),
            Stream.runCollect,
            // Handlers that would answer otherwise (deny, Paris, refuse): Turn.events must not use them.
            Effect.provide(CallbackHandler.layer({
              approval: (context) => {
                handled.push(context.callback.kind)
                return new Answer.DenyApproval({ reason: "the handler answered" })
              },
              clientTool: (callback) => {
                handled.push(callback.kind)
                return Answer.ClientToolResult.success({ city: "Paris", country: "France" })
              },
              signIn: (callback) => {
                handled.push(callback.kind)
                return signInAnswer(callback, "denied")
              }
            }))
          )
          assert.deepStrictEqual(answered, ["sign_in", "approval", "client_tool"])
          assert.deepStrictEqual(handled, [])
          const last = events[events.length - 1]
          assert.strictEqual(last._tag, "TurnEnded")
          if (last._tag === "TurnEnded") {
            assert.strictEqual(stateAs(last.state, "Completed").text, `${EMAIL_ABOUT} ${IN_LYON}`)
          }
          // The answers given by id are the ones that won.
          assert.deepStrictEqual(
            ofTag(events, "CallbackResolved").map((event) => [event.resolution, event.answer?._tag]),
            [["answered", "SignInAnswer"], ["answered", "AllowApproval"], ["answered", "ClientToolResult"]]
          )
          // The turn's stored events: from its cursor, gap-free, in this order (TurnBlocked aside). The live deltas
          // carry the seq of their step's ModelStepStarted, and are not stored.
          const stored = events.filter((event) => event._tag !== "MessageDelta")
          assert.strictEqual(stored[0].seq, turn.cursor)
          assert.deepStrictEqual(stored.map((event) => event.seq), stored.map((_, i) => turn.cursor + i))
          const steps = ofTag(events, "ModelStepStarted")
          for (const delta of ofTag(events, "MessageDelta")) {
            assert.isTrue(steps.some((step) => step.seq === delta.seq && step.messageId === delta.messageId))
          }
          assert.deepStrictEqual(
            stored.filter((event) => event._tag !== "TurnBlocked").map((e) => e._tag),
            [
              "TurnQueued",
              "TurnStarted",
              "ModelStepStarted",
              "ToolCallStarted",
              "CallbackOpened",
              "CallbackResolved",
              "ToolExecutionStarted",
              "ToolCallCompleted",
              "ModelStepStarted",
              "ToolCallStarted",
              "CallbackOpened",
              "CallbackResolved",
              "CallbackOpened",
              "CallbackResolved",
              "ToolCallCompleted",
              "ModelStepStarted",
              "MessageCompleted",
              "TurnEnded"
            ]
          )
          const streamed = ofTag(events, "MessageDelta").map((event) => event.delta).join("")
          if (liveDeltas === "every reader") {
            assert.strictEqual(streamed, `${EMAIL_ABOUT} ${IN_LYON}`)
          } else {
            // Streamed only to the readers in the process that runs the tree; the others have the stored text.
            assert.include(["", `${EMAIL_ABOUT} ${IN_LYON}`], streamed)
            assert.strictEqual(ofTag(events, "MessageCompleted").at(-1)?.text, `${EMAIL_ABOUT} ${IN_LYON}`)
          }
        })))
  })

  describe("readers", () => {
    it.effect("two readers of Turn.events both see the CallbackResolved of an answer given by id", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant({ permissions: policy("allow") }))
          const turn = yield* Session.sendMessage(session, "Where am I?")
          const read = Turn.events(turn).pipe(Stream.runCollect, Effect.forkChild)
          const first = yield* read
          const second = yield* read
          const blocked = stateAs(yield* Turn.result(turn), "Blocked")
          const callback = blocked.callbacks[0]
          yield* Turn.answer(turn, callback.id, lyon)
          const [one, two] = yield* Fiber.joinAll([first, second])
          for (const events of [one, two]) {
            const resolved = assertOneResolution(events, callback.id, "answered")
            assert.deepStrictEqual(resolved.answer, lyon)
            assert.strictEqual(events[events.length - 1]._tag, "TurnEnded")
          }
          assert.deepStrictEqual(one.map((event) => event.seq), two.map((event) => event.seq))
        })))
  })
}
