/**
 * Remembered grants: an approval answered with `remember` answers the next call of its tool at once, `Session.grants`
 * lists it and `Session.revokeGrant` removes it — the same through every transport.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import * as Principal from "@parley/core/Principal"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { kinds, logOf, ofTag, stateAs } from "./assertions.js"
import { assistant, brain, LOCATION, lyon } from "./fixtures.js"
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
  })
