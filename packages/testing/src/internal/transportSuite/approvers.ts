/**
 * Who may answer: an approval opened by a rule with `approvers` lists them, and an answer from a principal without
 * the right — a program without the role, or over HTTP a key without it, whatever the client claims — fails with
 * `NotAllowedToAnswer` (HTTP 403), changes nothing and leaves the approval open for someone who may; a handler without
 * the right leaves it open too — the same through every transport.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import { Approvers, PermissionPolicy, PermissionRule } from "@parley/core/Permissions"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import * as Effect from "effect/Effect"
import { kinds, stateAs } from "./assertions.js"
import { assistant, brain, LOCATION } from "./fixtures.js"
import type { WithModel } from "./harness.js"

const finance = new Approvers({ roles: ["finance"], principals: [] })
const guarded = () =>
  assistant({
    permissions: new PermissionPolicy({
      default: "allow",
      rules: [new PermissionRule({ tools: ["client.get_location"], decision: "ask", approvers: finance })]
    })
  })

export const approvers = (withModel: WithModel) =>
  describe("who may answer", () => {
    it.effect("an answer without the right is NotAllowedToAnswer; nothing is recorded and the approval lists who may", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(guarded())
          const asked = stateAs(yield* Session.run(session, "Where am I?"), "Blocked")
          assert.deepStrictEqual(kinds(asked.callbacks), ["approval"])
          const [approval] = asked.callbacks
          // The open callback says who may answer it.
          assert.deepStrictEqual(approval._tag === "OpenApproval" ? approval.request.approvers : undefined, finance)
          const turn = yield* Session.turn(session, asked.turnId)
          const error = yield* Effect.flip(
            Turn.answer(turn, approval.id, new Answer.AllowApproval(), { label: "mallory", roles: ["sales"] })
          )
          assert.strictEqual(error._tag, "NotAllowedToAnswer")
          if (error._tag === "NotAllowedToAnswer") {
            assert.deepStrictEqual(error.approvers, finance)
            assert.strictEqual(error.callbackId, approval.id)
          }
          const denied = yield* Effect.flip(Turn.answer(turn, approval.id, new Answer.DenyApproval({ reason: "no" })))
          assert.strictEqual(denied._tag, "NotAllowedToAnswer")
          // Nothing was recorded: the approval is still the one open.
          const still = yield* Turn.openCallbacks(turn)
          assert.deepStrictEqual(still.map((callback) => callback.id), [approval.id])
        })))

    it.effect("a handler without the right leaves the approval open for someone who may", () =>
      withModel(brain([LOCATION]), () =>
        Effect.gen(function*() {
          // The handler allows; the rule wants finance, and a handler holds no role: its answer is not used.
          const handlers = CallbackHandler.layer({ approval: () => new Answer.AllowApproval() })
          const state = yield* Agent.run(guarded(), "Where am I?").pipe(Effect.provide(handlers))
          const blocked = stateAs(state, "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
        })))
  })
