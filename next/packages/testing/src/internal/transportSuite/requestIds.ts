/**
 * Idempotent sends: a `sendMessage` repeated with its request id (a retry) returns the turn the first one queued and
 * queues nothing; another id queues another turn; a malformed id fails with `InvalidId` and sends nothing. `Session.run`
 * with a repeated id waits for the same turn.
 *
 * Idempotent answers: an answer repeated with the request id of the one that won succeeds and adds nothing (one
 * `CallbackResolved`, carrying the id); another answer — another id, or none — still fails with
 * `CallbackAlreadyAnswered`; a malformed id fails with `InvalidId` and answers nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import * as Session from "@parley/core/Session"
import * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { assertOneResolution, kinds, logOf, stateAs, turnOf, within } from "./assertions.js"
import { answerAll, assistant, brain, IN_LYON, LOCATION, lyon, policy } from "./fixtures.js"
import type { WithModel } from "./harness.js"

/** The `TurnQueued`s of the session's tree, up to the `seq` `until` (exclusive), as `[turnId, requestId]`. */
const queued = (sessionId: Session.Session["id"], until: number) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    transport.events(sessionId, 0).pipe(
      Stream.takeWhile((event) => event.seq < until),
      Stream.filter((event) => event._tag === "TurnQueued"),
      Stream.map((event) => (event._tag === "TurnQueued" ? [event.turnId, event.requestId] : [])),
      Stream.runCollect
    ))

export const requestIds = (withModel: WithModel) =>
  describe("request ids", () => {
    it.effect("the same request id twice: the same turn and cursor, one TurnQueued; another id: another turn", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const first = yield* Session.sendMessage(session, "Where am I?", { requestId: "req-0001" })
          const again = yield* Session.sendMessage(session, "Where am I?", { requestId: "req-0001" })
          assert.deepStrictEqual([again.turnId, again.cursor], [first.turnId, first.cursor])
          const other = yield* Session.sendMessage(session, "And now?", { requestId: "req-0002" })
          assert.notStrictEqual(other.turnId, first.turnId)
          assert.isAbove(other.cursor, first.cursor)
          const log = yield* within("the log", queued(session.id, other.cursor + 1))
          assert.deepStrictEqual(Array.from(log), [[first.turnId, "req-0001"], [other.turnId, "req-0002"]])
          yield* Session.cancel(session)
        })))

    it.effect("Session.run again with the id of a turn that completed: that turn's state, no new turn", () =>
      withModel(brain([LOCATION]), (model) =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const done = yield* Session.run(session, "Where am I?", { requestId: "run-1" }).pipe(
            Effect.provide(answerAll())
          )
          const completed = stateAs(done, "Completed")
          assert.strictEqual(completed.text, IN_LYON)
          const calls = (yield* model.calls).length
          const again = stateAs(yield* Session.run(session, "Where am I?", { requestId: "run-1" }), "Completed")
          assert.deepStrictEqual([again.turnId, again.text], [completed.turnId, IN_LYON])
          assert.strictEqual((yield* model.calls).length, calls, "the model was not called again")
        })))

    it.effect("a malformed request id fails with InvalidId, and no turn is queued", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          for (const requestId of ["", "two words", "x".repeat(129)]) {
            const error = yield* Effect.flip(Session.sendMessage(session, "Where am I?", { requestId }))
            assert.strictEqual(error._tag, "InvalidId", `request id ${JSON.stringify(requestId)}`)
          }
          const ok = yield* Session.sendMessage(session, "Where am I?", { requestId: "x".repeat(128) })
          assert.strictEqual(ok.cursor, 0, "the first turn queued is the valid one's")
          yield* Session.cancel(session)
        })))

    /** A turn blocked on one client tool call (the policy allows get_location). */
    const blockedOnClientTool = Effect.gen(function*() {
      const agent = assistant({ permissions: policy("allow") })
      const blocked = stateAs(yield* Agent.run(agent, "Where am I?"), "Blocked")
      assert.deepStrictEqual(kinds(blocked.callbacks), ["client_tool"])
      return { blocked, turn: yield* turnOf(agent, blocked), callback: blocked.callbacks[0] }
    })

    it.effect("an answer repeated with the winner's request id succeeds and adds nothing; another answer fails", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          yield* Turn.answer(turn, callback.id, lyon, { requestId: "answer-1" })
          // A retry (the first try's response was lost): accepted again, whatever it carries.
          yield* Turn.answer(turn, callback.id, lyon, { requestId: "answer-1" })
          const paris = Answer.ClientToolResult.success({ city: "Paris", country: "France" })
          yield* Turn.answer(turn, callback.id, paris, { requestId: "answer-1" })
          for (const other of [{ requestId: "answer-2" }, undefined]) {
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, paris, other))
            assert.strictEqual(error._tag, "CallbackAlreadyAnswered", JSON.stringify(other))
            if (error._tag === "CallbackAlreadyAnswered") assert.deepStrictEqual(error.answer, lyon)
          }
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
          yield* Turn.answer(turn, callback.id, lyon, { requestId: "answer-1" })
          const resolved = assertOneResolution(yield* logOf(turn), callback.id, "answered")
          assert.deepStrictEqual([resolved.answer, resolved.requestId], [lyon, "answer-1"])
        })))

    it.effect("an answer with a malformed request id fails with InvalidId, and the callback stays open", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const { blocked, callback, turn } = yield* blockedOnClientTool
          for (const requestId of ["", "two words", "x".repeat(129)]) {
            const error = yield* Effect.flip(Turn.answer(turn, callback.id, lyon, { requestId }))
            assert.strictEqual(error._tag, "InvalidId", `request id ${JSON.stringify(requestId)}`)
          }
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((open) => open.id), [callback.id])
          yield* Turn.answer(turn, callback.id, lyon, { requestId: "x".repeat(128) })
          assert.strictEqual(stateAs(yield* Turn.result(turn, { after: blocked }), "Completed").text, IN_LYON)
        })))
  })
