/**
 * Remembered grants: an approval answered with `remember` answers the next call of its tool at once, `Session.grants`
 * lists it and `Session.revokeGrant` removes it; one scoped with `rememberWhen` answers only the calls whose
 * arguments meet its conditions, and a rule's `when` decides on the arguments — the same through every transport.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import { Equals, PermissionPolicy, PermissionRule } from "@parley/core/Permissions"
import * as Principal from "@parley/core/Principal"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { kinds, logOf, ofTag, stateAs } from "./assertions.js"
import { assistant, brain, LOCATION, lyon } from "./fixtures.js"

const precisely = (precision: "city" | "street") => ({ name: LOCATION.name, params: { precision } })
const cityOnly = [new Equals({ pointer: "/precision", value: "city" })]
import type { WithModel } from "./harness.js"

export const grants = (withModel: WithModel) =>
  describe("grants", () => {
    it.effect("an approval with remember answers the next call of its tool; revoked, the grant is gone", () =>
      withModel(brain([LOCATION], [LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const asked = stateAs(yield* Session.run(session, "Where am I? Twice."), "Blocked")
          assert.deepStrictEqual(kinds(asked.callbacks), ["approval"])
          const turn = yield* Session.turn(session, asked.turnId)
          yield* Turn.answer(turn, asked.callbacks[0].id, new Answer.AllowApproval({ remember: "session" }))
          const located = stateAs(yield* Turn.result(turn, { after: asked }), "Blocked")
          yield* Turn.answer(turn, located.callbacks[0].id, lyon)
          // The second call's approval was answered by the grant: only its client tool call waits.
          const again = stateAs(yield* Turn.result(turn, { after: located }), "Blocked")
          assert.deepStrictEqual(kinds(again.callbacks), ["client_tool"])
          const [grant] = yield* Session.grants(session)
          assert.strictEqual(grant?.toolPattern, "client.get_location")
          yield* Turn.answer(turn, again.callbacks[0].id, lyon)
          stateAs(yield* Turn.result(turn, { after: again }), "Completed")
          const approvals = ofTag(yield* logOf(turn), "CallbackResolved").filter((event) =>
            event.answer?._tag === "AllowApproval"
          )
          // The first by the program, by id (a `Client` in process, an `ApiKey` over HTTP); the second by the grant.
          assert.strictEqual(approvals.length, 2)
          assert.include(["Client", "ApiKey"], approvals[0]?.answeredBy?._tag)
          assert.deepStrictEqual(approvals[1]?.answeredBy, new Principal.Grant({ id: grant.grantId }))

          yield* Session.revokeGrant(session, grant.grantId)
          assert.deepStrictEqual(yield* Session.grants(session), [])
          const error = yield* Effect.flip(Session.revokeGrant(session, grant.grantId))
          assert.strictEqual(error._tag, "GrantNotFound")
        })))

    it.effect("a grant scoped with rememberWhen answers only the calls whose arguments meet its conditions", () =>
      withModel(brain([precisely("city")], [precisely("street")], [precisely("city")]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const asked = stateAs(yield* Session.run(session, "Where am I? Three times."), "Blocked")
          const turn = yield* Session.turn(session, asked.turnId)
          yield* Turn.answer(
            turn,
            asked.callbacks[0].id,
            new Answer.AllowApproval({ remember: "session", rememberWhen: cityOnly })
          )
          const [grant] = yield* Session.grants(session)
          assert.deepStrictEqual(grant?.when, cityOnly)
          const first = stateAs(yield* Turn.result(turn, { after: asked }), "Blocked")
          yield* Turn.answer(turn, first.callbacks[0].id, lyon)
          // precision "street": outside the grant, so its approval waits for a person
          const street = stateAs(yield* Turn.result(turn, { after: first }), "Blocked")
          assert.deepStrictEqual(kinds(street.callbacks), ["approval"])
          yield* Turn.answer(turn, street.callbacks[0].id, new Answer.AllowApproval())
          const second = stateAs(yield* Turn.result(turn, { after: street }), "Blocked")
          yield* Turn.answer(turn, second.callbacks[0].id, lyon)
          // precision "city" again: the grant answers, only the client tool call waits
          const third = stateAs(yield* Turn.result(turn, { after: second }), "Blocked")
          assert.deepStrictEqual(kinds(third.callbacks), ["client_tool"])
          yield* Turn.answer(turn, third.callbacks[0].id, lyon)
          stateAs(yield* Turn.result(turn, { after: third }), "Completed")
          const byGrant = ofTag(yield* logOf(turn), "CallbackResolved").filter((event) =>
            event.answeredBy?._tag === "Grant"
          )
          assert.strictEqual(byGrant.length, 1)
        })))

    it.effect("rememberWhen on a field the tool does not have is AnswerMismatch; the approval stays open", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const asked = stateAs(yield* Session.run(session, "Where am I?"), "Blocked")
          const turn = yield* Session.turn(session, asked.turnId)
          const error = yield* Effect.flip(Turn.answer(
            turn,
            asked.callbacks[0].id,
            new Answer.AllowApproval({
              remember: "session",
              rememberWhen: [new Equals({ pointer: "/precison", value: "city" })]
            })
          ))
          assert.strictEqual(error._tag, "AnswerMismatch")
          assert.include(error.message, "did you mean /precision?")
          assert.deepStrictEqual(yield* Session.grants(session), [])
          yield* Turn.answer(turn, asked.callbacks[0].id, new Answer.AllowApproval())
          const located = stateAs(yield* Turn.result(turn, { after: asked }), "Blocked")
          assert.deepStrictEqual(kinds(located.callbacks), ["client_tool"])
        })))

    it.effect("a rule's conditions decide on the call's arguments, and the log names the condition", () =>
      withModel(brain([precisely("city")], [precisely("street")]), () =>
        Effect.gen(function*() {
          const permissions = new PermissionPolicy({
            default: "allow",
            rules: [
              new PermissionRule({ tools: ["client.get_location"], decision: "allow", when: cityOnly }),
              new PermissionRule({ tools: ["client.get_location"], decision: "ask" })
            ]
          })
          const session = yield* Agent.startSession(assistant({ permissions }))
          const city = stateAs(yield* Session.run(session, "Where am I? Then precisely."), "Blocked")
          assert.deepStrictEqual(kinds(city.callbacks), ["client_tool"])
          const turn = yield* Session.turn(session, city.turnId)
          yield* Turn.answer(turn, city.callbacks[0].id, lyon)
          const street = stateAs(yield* Turn.result(turn, { after: city }), "Blocked")
          assert.deepStrictEqual(kinds(street.callbacks), ["approval"])
          yield* Turn.answer(turn, street.callbacks[0].id, new Answer.AllowApproval())
          const located = stateAs(yield* Turn.result(turn, { after: street }), "Blocked")
          yield* Turn.answer(turn, located.callbacks[0].id, lyon)
          stateAs(yield* Turn.result(turn, { after: located }), "Completed")
          const started = ofTag(yield* logOf(turn), "ToolCallStarted")
          assert.deepStrictEqual(
            started[0]?.decidedBy,
            new Principal.Policy({ rule: `rules[0] client.get_location when /precision = "city": allow` })
          )
          assert.isUndefined(started[1]?.decidedBy)
        })))
  })
