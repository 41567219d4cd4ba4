/**
 * What a request is judged on first, when several things are wrong with it (issue 35, point 7): every transport answers
 * as the in-process one does. A malformed request id is refused before anything else (`InvalidId`); then the session
 * (an unknown one, or a malformed id, is `SessionNotFound` whatever else is wrong); then the turn and callback ids
 * (`TurnNotFound`, `CallbackNotOpen`), the answer (`AnswerMismatch`) and who answers (`AnswerMismatch`); a turn or
 * callback that is well formed but unknown is judged after the answer. Nothing is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import type * as ParleyError from "@parley/core/ParleyError"
import * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { assertOneResolution, kinds, logOf, stateAs, turnOf, within } from "./assertions.js"
import { assistant, brain, IN_LYON, LOCATION, lyon, policy } from "./fixtures.js"
import { outcomeOf } from "./hardening/scenarios.js"
import type { WithModel } from "./harness.js"

/** A session id no runtime has: well formed, unknown. */
const UNKNOWN_SESSION = "ses_0123456789abcdef0123"
const UNKNOWN_TURN = "turn_0123456789abcdef0123_9"
const UNKNOWN_CALLBACK = "cb_0123456789abcdef0123"
const MALFORMED_ANSWER = { _tag: "ClientToolResult", isFailure: "yes", result: {} }
const MALFORMED_REQUEST_ID = "not a request id"

export const precedence = (withModel: WithModel) =>
  describe("what a request is judged on first (issue 35, point 7)", () => {
    it.effect("answers with several things wrong fail as in-process: request id, session, ids, answer, answerer", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant({ permissions: policy("allow") })
          const blocked = stateAs(yield* within("Agent.run", Agent.run(agent, "Where am I?")), "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
          const callback = blocked.callbacks[0]
          const transport = yield* Transport.Transport
          const known = { sessionId: blocked.sessionId, turnId: blocked.turnId, callbackId: callback.id, answer: lyon }
          const cases: ReadonlyArray<
            readonly [string, ParleyError.ParleyError["_tag"], Record<string, unknown>]
          > = [
            ["an unknown session and a malformed answer", "SessionNotFound", {
              sessionId: UNKNOWN_SESSION,
              answer: MALFORMED_ANSWER
            }],
            ["an unknown session and a malformed turn id", "SessionNotFound", {
              sessionId: UNKNOWN_SESSION,
              turnId: 42
            }],
            ["an unknown session and a malformed callback id", "SessionNotFound", {
              sessionId: UNKNOWN_SESSION,
              callbackId: null
            }],
            ["an unknown session and a malformed answeredBy", "SessionNotFound", {
              sessionId: UNKNOWN_SESSION,
              answeredBy: { _tag: "Nobody" }
            }],
            ["a malformed session id and a malformed answer", "SessionNotFound", {
              sessionId: "garbage",
              answer: MALFORMED_ANSWER
            }],
            ["a malformed request id and an unknown session", "InvalidId", {
              sessionId: UNKNOWN_SESSION,
              requestId: MALFORMED_REQUEST_ID
            }],
            ["a malformed request id and a malformed answer", "InvalidId", {
              answer: MALFORMED_ANSWER,
              requestId: MALFORMED_REQUEST_ID
            }],
            ["a malformed turn id and a malformed answer", "TurnNotFound", { turnId: 42, answer: MALFORMED_ANSWER }],
            ["a malformed callback id and a malformed answer", "CallbackNotOpen", {
              callbackId: 42,
              answer: MALFORMED_ANSWER
            }],
            ["an unknown turn and a malformed answer", "AnswerMismatch", {
              turnId: UNKNOWN_TURN,
              answer: MALFORMED_ANSWER
            }],
            ["an unknown callback and a malformed answer", "AnswerMismatch", {
              callbackId: UNKNOWN_CALLBACK,
              answer: MALFORMED_ANSWER
            }],
            ["a malformed answer and a malformed answeredBy", "AnswerMismatch", {
              answer: MALFORMED_ANSWER,
              answeredBy: 42
            }],
            ["a malformed answeredBy alone", "AnswerMismatch", { answeredBy: { _tag: "Nobody" } }]
          ]
          const outcomes: Array<string> = []
          for (const [name, , fields] of cases) {
            const request = { ...known, ...fields } as unknown as Transport.AnswerRequest
            outcomes.push(`${name} → ${yield* within(name, outcomeOf(transport.answer(request)))}`)
          }
          assert.deepStrictEqual(outcomes, cases.map(([name, tag]) => `${name} → ${tag}`))
          // Nothing was stored: the callback is open, and a valid answer completes the turn.
          const turn = yield* turnOf(agent, blocked)
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, lyon)
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          assertOneResolution(yield* logOf(turn), callback.id, "answered")
        })))

    it.effect("sends and reads with several things wrong fail as in-process: request id, then session, then turn", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const agent = assistant({ permissions: policy("allow") })
          const session = yield* Agent.startSession(agent)
          const transport = yield* Transport.Transport
          const unknown = UNKNOWN_SESSION as Transport.SessionInfo["sessionId"]
          const garbage = "garbage" as Transport.SessionInfo["sessionId"]
          const malformedTurn = 42 as unknown as Transport.TurnRef["turnId"]
          const cases: ReadonlyArray<
            readonly [string, ParleyError.ParleyError["_tag"], Effect.Effect<unknown, unknown>]
          > = [
            [
              "a message with a malformed request id to an unknown session",
              "InvalidId",
              transport.sendMessage(unknown, "Hi", { requestId: MALFORMED_REQUEST_ID })
            ],
            [
              "a message with a malformed request id to a malformed session id",
              "InvalidId",
              transport.sendMessage(garbage, "Hi", { requestId: MALFORMED_REQUEST_ID })
            ],
            ["a message to an unknown session", "SessionNotFound", transport.sendMessage(unknown, "Hi")],
            [
              "a snapshot of a malformed turn id of an unknown session",
              "SessionNotFound",
              transport.snapshot(unknown, malformedTurn)
            ],
            [
              "a turn with a malformed id of an unknown session",
              "SessionNotFound",
              transport.getTurn(unknown, malformedTurn)
            ],
            [
              "a snapshot of a malformed turn id of a known session",
              "TurnNotFound",
              transport.snapshot(session.id, malformedTurn)
            ]
          ]
          const outcomes: Array<string> = []
          for (const [name, , effect] of cases) outcomes.push(`${name} → ${yield* within(name, outcomeOf(effect))}`)
          assert.deepStrictEqual(outcomes, cases.map(([name, tag]) => `${name} → ${tag}`))
          // No turn was queued.
          assert.strictEqual((yield* transport.getSession(session.id)).cursor, 0)
        })))
  })
