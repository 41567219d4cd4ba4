import { assert, describe, it } from "@effect/vitest"
import { Answer, ParleyError } from "@parley/core"
import type { Callback } from "@parley/core"
import { Effect, Schema } from "effect"
import * as F from "./fixtures.js"

const kinds: ReadonlyArray<{
  readonly callback: Callback.Callback
  readonly accepts: ReadonlyArray<Answer.Answer["_tag"]>
}> = [
  { callback: F.approval, accepts: ["AllowApproval", "DenyApproval"] },
  { callback: F.clientToolCall, accepts: ["ClientToolResult"] },
  { callback: F.signIn, accepts: ["SignInAnswer"] }
]

const mismatch = (callback: Callback.Callback, answer: Answer.Answer) =>
  Answer.validate(callback, answer).pipe(Effect.flip)

describe("Answer.validate", () => {
  it.effect("every callback kind × every answer kind", () =>
    Effect.gen(function*() {
      let accepted = 0
      let rejected = 0
      for (const { accepts, callback } of kinds) {
        assert.deepStrictEqual(Answer.expectedFor(callback), accepts)
        for (const answer of F.answers) {
          if (accepts.includes(answer._tag)) {
            const result = yield* Answer.validate(callback, answer)
            assert.strictEqual(result, answer, `${callback.kind} takes ${answer._tag}`)
            accepted++
          } else {
            const error = yield* mismatch(callback, answer)
            assert.instanceOf(error, ParleyError.AnswerMismatch, `${callback.kind} refuses ${answer._tag}`)
            assert.strictEqual(error._tag, "AnswerMismatch")
            assert.strictEqual(error.callbackId, callback.id)
            assert.strictEqual(error.module, "Answer")
            assert.strictEqual(error.method, "validate")
            for (const tag of accepts) assert.include(error.reason, tag)
            assert.include(error.reason, callback.kind)
            assert.include(error.reason, `not ${answer._tag}`)
            assert.include(error.message, callback.id)
            assert.include(error.message, "Nothing was sent")
            rejected++
          }
        }
      }
      // approval: 3 of 6 answers, client tool: 2 of 6, sign-in: 1 of 6
      assert.strictEqual(accepted, 6)
      assert.strictEqual(rejected, 12)
    }))

  it.effect("an approval of a subagent is checked against its own id", () =>
    Effect.gen(function*() {
      const error = yield* mismatch(F.approvalByDefault, F.toolSuccess)
      assert.strictEqual(error.callbackId, "cb_default")
      assert.strictEqual(yield* Answer.validate(F.approvalByDefault, F.allow), F.allow)
    }))
})

describe("Answer.validate sign-in", () => {
  const reasonOf = (answer: Answer.SignInAnswer) =>
    mismatch(F.signIn, answer).pipe(
      Effect.map((error) => {
        assert.instanceOf(error, ParleyError.AnswerMismatch)
        assert.strictEqual(error.callbackId, F.signIn.id)
        return error.reason
      })
    )

  it.effect("a complete answer passes and is returned as is", () =>
    Effect.gen(function*() {
      const complete = [
        F.signInAnswer,
        new Answer.SignInAnswer({ connected: ["req_drive"], denied: ["req_gmail"] }),
        new Answer.SignInAnswer({ connected: ["req_drive", "req_gmail"] }),
        new Answer.SignInAnswer({ denied: ["req_gmail", "req_drive"] })
      ]
      for (const answer of complete) {
        assert.strictEqual(yield* Answer.validate(F.signIn, answer), answer)
      }
    }))

  it.effect("rejects an answer that omits a requested source", () =>
    Effect.gen(function*() {
      const reason = yield* reasonOf(new Answer.SignInAnswer({ connected: ["req_gmail"] }))
      assert.include(reason, "does not name req_drive")
      assert.notInclude(reason, "req_gmail")

      const empty = yield* reasonOf(new Answer.SignInAnswer({}))
      assert.include(empty, "does not name req_gmail, req_drive")
    }))

  it.effect("rejects an answer that names an unknown request, and lists the requested ones", () =>
    Effect.gen(function*() {
      const reason = yield* reasonOf(
        new Answer.SignInAnswer({ connected: ["req_gmail", "req_slack"], denied: ["req_drive"] })
      )
      assert.include(reason, "names unknown sign-in requests req_slack")
      assert.include(reason, "requested: req_gmail, req_drive")
      assert.notInclude(reason, "does not name")

      // requests are named by id, not by source
      const bySource = yield* reasonOf(new Answer.SignInAnswer({ denied: ["gmail", "drive"] }))
      assert.include(bySource, "names unknown sign-in requests gmail, drive")
      assert.include(bySource, "does not name req_gmail, req_drive")
    }))

  it.effect("rejects a request named as both connected and denied", () =>
    Effect.gen(function*() {
      const reason = yield* reasonOf(
        new Answer.SignInAnswer({ connected: ["req_gmail"], denied: ["req_gmail", "req_drive"] })
      )
      assert.include(reason, "names req_gmail as both connected and denied")
      assert.notInclude(reason, "more than once")
      assert.notInclude(reason, "does not name")
    }))

  it.effect("rejects a request named twice", () =>
    Effect.gen(function*() {
      const inConnected = yield* reasonOf(
        new Answer.SignInAnswer({ connected: ["req_gmail", "req_gmail"], denied: ["req_drive"] })
      )
      assert.include(inConnected, "names req_gmail more than once")
      assert.notInclude(inConnected, "both")

      const inDenied = yield* reasonOf(
        new Answer.SignInAnswer({ connected: ["req_gmail"], denied: ["req_drive", "req_drive", "req_drive"] })
      )
      assert.include(inDenied, "names req_drive more than once")
      assert.notInclude(inDenied, "req_drive, req_drive")
    }))

  it.effect("reports every issue at once", () =>
    Effect.gen(function*() {
      const reason = yield* reasonOf(
        new Answer.SignInAnswer({ connected: ["req_gmail", "req_x"], denied: ["req_gmail"] })
      )
      assert.include(reason, "unknown sign-in requests req_x")
      assert.include(reason, "does not name req_drive")
      assert.include(reason, "req_gmail as both connected and denied")
    }))

  it.effect("a sign-in answer to another kind of callback is a kind mismatch, not a sign-in issue", () =>
    Effect.gen(function*() {
      const error = yield* mismatch(F.approval, new Answer.SignInAnswer({}))
      assert.include(error.reason, "AllowApproval or DenyApproval")
      assert.notInclude(error.reason, "does not name")
    }))
})

describe("Answer.validate reasons (src bugs, see the report)", () => {
  // Fails today: Answer.ts `validate` writes "a approval callback takes …" and `signInIssues` lists an id once per
  // repetition in the "both connected and denied" issue ("names req_gmail, req_gmail as both …").
  it.effect("the kind-mismatch reason reads well", () =>
    Effect.gen(function*() {
      const kind = yield* mismatch(F.approval, F.toolSuccess)
      assert.strictEqual(kind.reason, "an approval callback takes AllowApproval or DenyApproval, not ClientToolResult")
    }))

  it.effect("the sign-in reason names a request both connected and denied once", () =>
    Effect.gen(function*() {
      const both = yield* mismatch(
        F.signIn,
        new Answer.SignInAnswer({ connected: ["req_gmail", "req_gmail"], denied: ["req_gmail", "req_drive"] })
      )
      assert.include(both.reason, "names req_gmail as both connected and denied")
    }))
})

describe("Answer constructors and guards", () => {
  it.effect("ClientToolResult.success / failure set isFailure", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        F.toolSuccess,
        new Answer.ClientToolResult({ isFailure: false, result: F.toolSuccess.result })
      )
      assert.isFalse(F.toolSuccess.isFailure)
      assert.isTrue(F.toolFailure.isFailure)
      assert.deepStrictEqual(F.toolFailure.result, { message: "no GPS fix" })
    }))

  it.effect("SignInAnswer defaults both lists to []", () =>
    Effect.sync(() => {
      const answer = new Answer.SignInAnswer({})
      assert.deepStrictEqual(answer.connected, [])
      assert.deepStrictEqual(answer.denied, [])
    }))

  it.effect("isKeepCallbackOpen recognises KeepCallbackOpen only", () =>
    Effect.sync(() => {
      assert.isTrue(Answer.isKeepCallbackOpen(new Answer.KeepCallbackOpen()))
      for (const answer of F.answers) assert.isFalse(Answer.isKeepCallbackOpen(answer))
      assert.isFalse(Answer.isKeepCallbackOpen({ _tag: "KeepCallbackOpen" }))
    }))
})

describe("SignInAnswer with a credential (SignInGrant)", () => {
  const grant = new Answer.SignInGrant({ id: "gmail", code: "the-code", state: "the-state" })

  it.effect("crosses the wire: encoded as JSON and decoded as the same grant", () =>
    Effect.gen(function*() {
      const answer = new Answer.SignInAnswer({ connected: [grant], denied: ["calendar"] })
      const json = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(Answer.Answer)(answer)))
      assert.deepStrictEqual(json, {
        _tag: "SignInAnswer",
        connected: [{ id: "gmail", code: "the-code", state: "the-state" }],
        denied: ["calendar"]
      })
      const decoded = yield* Schema.decodeUnknownEffect(Answer.Answer)(json)
      assert.strictEqual(decoded._tag, "SignInAnswer")
      if (decoded._tag !== "SignInAnswer") return
      assert.deepStrictEqual(decoded.connectedIds, ["gmail"])
      assert.instanceOf(decoded.connected[0], Answer.SignInGrant)
      const tokens = yield* Schema.decodeUnknownEffect(Answer.Answer)({
        _tag: "SignInAnswer",
        connected: [{ id: "gmail", tokens: { access_token: "at", token_type: "Bearer", expires_in: 60 } }]
      })
      assert.deepStrictEqual(tokens._tag === "SignInAnswer" ? tokens.connectedIds : [], ["gmail"])
    }))

  it.effect("names requests like ids: a grant for a request is valid, one for another request is not", () =>
    Effect.gen(function*() {
      const forGmail = new Answer.SignInGrant({ id: "req_gmail", code: "the-code" })
      const ok = yield* Answer.validate(
        F.signIn,
        new Answer.SignInAnswer({ connected: [forGmail], denied: ["req_drive"] })
      )
      assert.strictEqual(ok._tag, "SignInAnswer")
      const unknown = yield* mismatch(
        F.signIn,
        new Answer.SignInAnswer({
          connected: [forGmail, new Answer.SignInGrant({ id: "calendar", code: "c" })],
          denied: ["req_drive"]
        })
      )
      assert.include(unknown.message, "names unknown sign-in requests calendar")
      const both = yield* mismatch(
        F.signIn,
        new Answer.SignInAnswer({ connected: [forGmail], denied: ["req_gmail", "req_drive"] })
      )
      assert.include(both.message, "names req_gmail as both connected and denied")
    }))
})
