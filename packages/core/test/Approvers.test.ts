import { assert, describe, it } from "@effect/vitest"
import { ParleyError, Permissions, Principal } from "@parley/core"
import { Effect, Schema } from "effect"

describe("who may answer", () => {
  const approvers = new Permissions.Approvers({ roles: ["finance", "oncall"], principals: ["alice", "key_cfo00001"] })

  it("mayAnswer: a role held, or a name listed; no approvers: anyone", () => {
    assert.isTrue(Principal.mayAnswer(new Principal.Client({ roles: ["oncall"] }), approvers))
    assert.isTrue(Principal.mayAnswer(new Principal.Client({ label: "alice" }), approvers))
    assert.isTrue(Principal.mayAnswer(new Principal.ApiKey({ tenant: "t", keyId: "key_cfo00001" }), approvers))
    assert.isTrue(Principal.mayAnswer(new Principal.ApiKey({ tenant: "t", keyId: "k", roles: ["finance"] }), approvers))
    assert.isFalse(Principal.mayAnswer(new Principal.Client({ label: "bob", roles: ["sales"] }), approvers))
    assert.isFalse(Principal.mayAnswer(undefined, approvers))
    assert.isFalse(Principal.mayAnswer(new Principal.Grant({ id: "grant_1" }), approvers))
    // a claim made over HTTP is not the key's right
    const claimed = new Principal.ApiKey({
      tenant: "t",
      keyId: "k",
      onBehalfOf: new Principal.Client({ label: "alice", roles: ["finance"] })
    })
    assert.deepStrictEqual(Principal.rolesOf(claimed), [])
    assert.deepStrictEqual(Principal.namesOf(claimed), ["k"])
    assert.isFalse(Principal.mayAnswer(claimed, approvers))
    assert.isTrue(Principal.mayAnswer(undefined, undefined))
  })

  it.effect("NotAllowedToAnswer says who answered and who may, and round-trips as a ParleyError", () =>
    Effect.gen(function*() {
      const error = new ParleyError.NotAllowedToAnswer({
        module: "Turn",
        method: "answer",
        callbackId: "cb_1",
        principal: "by id (bob)",
        approvers
      })
      assert.strictEqual(
        error.message,
        "Turn.answer: by id (bob) may not answer callback cb_1; it may be answered by a principal with role finance " +
          "or oncall, or alice, or key_cfo00001; the callback is still open"
      )
      assert.isTrue(ParleyError.isParleyError(error))
      const json = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(ParleyError.ParleyError)(error)))
      const decoded = yield* Schema.decodeUnknownEffect(ParleyError.ParleyError)(json)
      assert.strictEqual(decoded._tag, "NotAllowedToAnswer")
      assert.deepStrictEqual(decoded._tag === "NotAllowedToAnswer" ? decoded.approvers : undefined, approvers)
    }))
})
