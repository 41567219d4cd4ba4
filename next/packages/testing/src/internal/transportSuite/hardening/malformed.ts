/**
 * Malformed answers from another process are typed errors that change nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import type { OpenSignIn } from "@parley/core/Callback"
import type * as ParleyError from "@parley/core/ParleyError"
import * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { assertOneResolution, kinds, logOf, stateAs, turnOf, within } from "../assertions.js"
import {
  assistant,
  brain,
  EMAIL,
  EMAIL_ABOUT,
  IN_LYON,
  LOCATION,
  lyon,
  NO_LOCATION,
  policy,
  signInAnswer
} from "../fixtures.js"
import type { WithModel } from "../harness.js"
import { assertFailsWith, outcomeOf, show, WHERE } from "./scenarios.js"

export const malformed = (withModel: WithModel) => {
  describe("malformed answers from another process", () => {
    /** A turn blocked on one client tool call (the policy allows get_location). */
    const blockedOnClientTool = Effect.gen(function*() {
      const agent = assistant({ permissions: policy("allow") })
      const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
      assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
      return { blocked, turn: yield* turnOf(agent, blocked), callback: blocked.callbacks[0] }
    })

    /** Sends `answer` for `callback` through the Transport service, as another process would (no checks). */
    const sendRaw = (blocked: { readonly sessionId: string; readonly turnId: string }, fields: {
      readonly sessionId?: unknown
      readonly turnId?: unknown
      readonly callbackId: unknown
      readonly answer: unknown
    }) =>
      Effect.flatMap(Transport.Transport, (transport) =>
        transport.answer({
          sessionId: ("sessionId" in fields ? fields.sessionId : blocked.sessionId) as Transport.AnswerRequest[
            "sessionId"
          ],
          turnId: ("turnId" in fields ? fields.turnId : blocked.turnId) as Transport.AnswerRequest["turnId"],
          callbackId: fields.callbackId as Transport.AnswerRequest["callbackId"],
          answer: fields.answer as Answer.Answer
        }))

    /** Nothing changed: the callback is still open, then a valid answer completes the turn as usual. */
    const assertStillOpen = (turn: Turn.Turn, callbackId: string) =>
      Effect.map(
        within("Turn.openCallbacks", Turn.openCallbacks(turn)),
        (open) => assert.deepStrictEqual(open.map((callback) => callback.id), [callbackId], "the callback is open")
      )

    it.effect("a DenyApproval whose reason is a number fails AnswerMismatch and changes nothing", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, WHERE)), "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback.kind, "approval")
          const turn = yield* turnOf(agent, blocked)
          for (
            const answer of [{ _tag: "DenyApproval", reason: 5 }, { _tag: "DenyApproval", reason: { why: "no" } }]
          ) {
            yield* assertFailsWith(
              `answer ${show(answer)}`,
              "AnswerMismatch",
              sendRaw(blocked, { callbackId: callback.id, answer })
            )
            yield* assertStillOpen(turn, callback.id)
          }
          const deny = new Answer.DenyApproval({ reason: "not now" })
          yield* Turn.answer(turn, callback.id, deny)
          const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(state, "Completed").text, NO_LOCATION)
          const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, deny)
        })))

    it.effect("a ClientToolResult whose isFailure is not a boolean fails AnswerMismatch and changes nothing", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          for (
            const answer of [
              { _tag: "ClientToolResult", isFailure: "yes", result: {} },
              { _tag: "ClientToolResult", isFailure: "no", result: { city: "Lyon", country: "France" } },
              { _tag: "ClientToolResult", isFailure: 0, result: { city: "Lyon", country: "France" } }
            ]
          ) {
            yield* assertFailsWith(
              `answer ${show(answer)}`,
              "AnswerMismatch",
              sendRaw(blocked, { callbackId: callback.id, answer })
            )
            yield* assertStillOpen(turn, callback.id)
          }
          yield* Turn.answer(turn, callback.id, lyon)
          const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))

    it.effect("a SignInAnswer with missing or garbage lists fails AnswerMismatch and changes nothing", () =>
      withModel(brain([EMAIL]), () =>
        Effect.gen(function*() {
          const agent = assistant()
          const blocked = stateAs(
            yield* within("Agent.run", Agent.run(agent, "What is my latest email about?")),
            "Blocked"
          )
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback._tag, "OpenSignIn")
          const requestId = (callback as OpenSignIn).requests[0].id
          const turn = yield* turnOf(agent, blocked)
          const garbage: ReadonlyArray<unknown> = [
            { _tag: "SignInAnswer" },
            { _tag: "SignInAnswer", connected: null, denied: null },
            { _tag: "SignInAnswer", connected: requestId },
            { _tag: "SignInAnswer", denied: { [requestId]: true } },
            { _tag: "SignInAnswer", connected: [42] },
            { _tag: "SignInAnswer", connected: [requestId, null] },
            { _tag: "SignInAnswer", connected: [], denied: [[requestId]] }
          ]
          const outcomes: Array<string> = []
          for (const answer of garbage) {
            outcomes.push(
              `${show(answer)} → ${yield* within(
                `answer ${show(answer)}`,
                outcomeOf(sendRaw(blocked, { callbackId: callback.id, answer }))
              )}`
            )
          }
          assert.deepStrictEqual(outcomes, garbage.map((answer) => `${show(answer)} → AnswerMismatch`))
          yield* assertStillOpen(turn, callback.id)
          const connected = signInAnswer(callback as OpenSignIn, "connected")
          yield* Turn.answer(turn, callback.id, connected)
          const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(state, "Completed").text, EMAIL_ABOUT)
          const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, connected)
        })))

    it.effect("malformed ids fail with typed errors (CallbackNotOpen, SessionNotFound, TurnNotFound)", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          const cases: ReadonlyArray<
            readonly [string, ParleyError.ParleyError["_tag"], Parameters<typeof sendRaw>[1]]
          > = [
            ...[42, null, undefined, {}, "", "not a callback id", "cb_unknown", [callback.id]].map((callbackId) =>
              [`callbackId ${show(callbackId)}`, "CallbackNotOpen", { callbackId, answer: lyon }] as const
            ),
            ...[42, null, undefined, {}, "", "garbage", "ses_unknown", [blocked.sessionId]].map((sessionId) =>
              [`sessionId ${show(sessionId)}`, "SessionNotFound", {
                sessionId,
                callbackId: callback.id,
                answer: lyon
              }] as const
            ),
            ...[42, null, undefined, {}, "", "garbage", "turn_unknown", [blocked.turnId]].map((turnId) =>
              [`turnId ${show(turnId)}`, "TurnNotFound", { turnId, callbackId: callback.id, answer: lyon }] as const
            )
          ]
          const outcomes: Array<string> = []
          for (const [name, , fields] of cases) {
            outcomes.push(`${name} → ${yield* within(name, outcomeOf(sendRaw(blocked, fields)))}`)
          }
          assert.deepStrictEqual(outcomes, cases.map(([name, tag]) => `${name} → ${tag}`))
          yield* assertStillOpen(turn, callback.id)
          yield* Turn.answer(turn, callback.id, lyon)
          const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          const resolved = assertOneResolution(yield* within("the log", logOf(turn)), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))

    it.effect("twenty garbage answers to a client tool call: each a typed AnswerMismatch, none changes anything", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          const LYON = { city: "Lyon", country: "France" }
          const garbage: ReadonlyArray<unknown> = [
            null,
            undefined,
            0,
            42,
            true,
            "ClientToolResult",
            [],
            [{ _tag: "ClientToolResult", isFailure: false, result: LYON }],
            {},
            Object.create(null),
            () => lyon,
            { isFailure: false, result: LYON },
            { _tag: "ClientToolResult" },
            { _tag: "ClientToolResult", isFailure: "yes", result: {} },
            { _tag: "ClientToolResult", isFailure: 1, result: LYON },
            { _tag: "ClientToolResult", isFailure: null, result: LYON },
            { _tag: "ClientToolResult", isFailure: false, result: { city: 1, country: "France" } },
            { _tag: "ClientToolResult", isFailure: false, result: "Lyon, France" },
            { _tag: "clienttoolresult", isFailure: false, result: LYON },
            { _tag: 7, isFailure: false, result: LYON },
            { _tag: "AllowApproval" },
            { _tag: "DenyApproval", reason: 5 },
            { _tag: "SignInAnswer", connected: "gmail" }
          ]
          const outcomes: Array<string> = []
          for (const answer of garbage) {
            outcomes.push(
              `${show(answer)} → ${yield* within(
                `answer ${show(answer)}`,
                outcomeOf(sendRaw(blocked, { callbackId: callback.id, answer }))
              )}`
            )
          }
          assert.deepStrictEqual(outcomes, garbage.map((answer) => `${show(answer)} → AnswerMismatch`))
          yield* assertStillOpen(turn, callback.id)
          yield* Turn.answer(turn, callback.id, lyon)
          const state = yield* within("Turn.result", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          const events = yield* within("the log", logOf(turn))
          const resolved = assertOneResolution(events, callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, lyon)
        })))
  })
}
