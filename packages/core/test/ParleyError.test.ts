import { assert, describe, it } from "@effect/vitest"
import { ParleyError } from "@parley/core"
import { Effect, Schema } from "effect"
import * as F from "./fixtures.js"

describe("ParleyError.isParleyError", () => {
  it.effect("is true for every member", () =>
    Effect.sync(() => {
      for (const error of F.errors) {
        assert.isTrue(ParleyError.isParleyError(error), error._tag)
        assert.instanceOf(error, Error)
      }
    }))

  it.effect("is false for a plain Error, an AiError-like object, an encoded error and non-objects", () =>
    Effect.gen(function*() {
      const encoded = yield* Schema.encodeEffect(ParleyError.ParleyError)(F.errors[0]!)
      const others: ReadonlyArray<unknown> = [
        new Error("boom"),
        { _tag: "AiError", module: "OpenAiClient", method: "generateText", description: "HTTP 500", message: "x" },
        { _tag: "InvalidId", module: "Ids", method: "sessionId", kind: "sessionId", value: "s" },
        encoded,
        null,
        undefined,
        "InvalidId",
        42
      ]
      for (const other of others) assert.isFalse(ParleyError.isParleyError(other), String(other))
    }))
})

describe("ParleyError messages", () => {
  const [
    invalidId,
    answerMismatch,
    callbackNotOpen,
    alreadyAnswered,
    sessionNotFound,
    turnNotFound,
    policyInvalid,
    agentInvalid,
    modelFailure,
    transportFailure
  ] = F.errors

  it.effect("name where the error was raised and the ids involved", () =>
    Effect.sync(() => {
      assert.strictEqual(
        invalidId!.message,
        "Ids.sessionId: invalid sessionId \"session-1\": a session id looks like ses_…"
      )
      assert.strictEqual(
        answerMismatch!.message,
        "Turn.answer: the answer does not fit callback cb_approval: wrong kind. Nothing was sent."
      )
      assert.strictEqual(callbackNotOpen!.message, "Turn.answer: callback cb_gone is not open: it expired")
      assert.strictEqual(alreadyAnswered!.message, "Turn.answer: callback cb_twice was already answered")
      assert.strictEqual(sessionNotFound!.message, "Session.get: no session ses_missing")
      assert.strictEqual(turnNotFound!.message, "Turn.result: no turn turn_missing in session ses_1")
      assert.strictEqual(
        policyInvalid!.message,
        "Policy.validate: invalid permission policy: bad pattern client.**; unknown namespace other"
      )
      assert.strictEqual(agentInvalid!.message, "Agent.make: agent assistant is invalid: duplicate tool client.x")
      assert.strictEqual(modelFailure!.message, "Model.generate: model mistral-large-latest failed: HTTP 503")
      assert.strictEqual(transportFailure!.message, "HttpTransport.answer: transport failure: connection refused")
      assert.strictEqual(
        F.errors[F.errors.length - 3]!.message,
        "Session.revokeGrant: session ses_1 has no grant grant_9 in force"
      )
      assert.strictEqual(
        F.errors[F.errors.length - 2]!.message,
        "HttpTransport.createSession: over the server's limit of 600 sessions started per key per minute (retry in 12 s)"
      )
      assert.strictEqual(
        F.errors[F.errors.length - 1]!.message,
        "Turn.answer: by id (mallory) may not answer callback cb_guarded; it may be answered by a principal with role " +
          "finance, or alice; the callback is still open"
      )
    }))

  it.effect("leave out an absent description", () =>
    Effect.sync(() => {
      assert.strictEqual(
        new ParleyError.CallbackNotOpen({ module: "Turn", method: "answer", callbackId: "cb_1" }).message,
        "Turn.answer: callback cb_1 is not open"
      )
      assert.strictEqual(
        new ParleyError.TransportFailure({ module: "HttpTransport", method: "events" }).message,
        "HttpTransport.events: transport failure"
      )
      assert.strictEqual(
        new ParleyError.ModelFailure({ module: "Model", method: "generate", model: "m" }).message,
        "Model.generate: model m failed"
      )
    }))

  it.effect("the message shows in the error's string form", () =>
    Effect.sync(() => {
      for (const error of F.errors) assert.include(String(error), error.message)
    }))
})

describe("ParleyError in Effect", () => {
  it.effect("each member fails an Effect with itself and is caught by tag", () =>
    Effect.gen(function*() {
      for (const error of F.errors) {
        const failed = yield* Effect.flip(Effect.fail(error))
        assert.strictEqual(failed, error)
      }
      const caught = yield* Effect.fail(F.errors[2]!).pipe(
        Effect.catchTag("CallbackNotOpen", (error) => Effect.succeed(error.callbackId))
      )
      assert.strictEqual(caught, "cb_gone")
      const guarded = yield* Effect.fail(F.errors[9]!).pipe(
        Effect.catchIf(ParleyError.isParleyError, (error) => Effect.succeed(error._tag))
      )
      assert.strictEqual(guarded, "TransportFailure")
    }))

  it.effect("members are yieldable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.gen(function*() {
          return yield* new ParleyError.SessionNotFound({ module: "Session", method: "get", sessionId: "ses_9" })
        })
      )
      assert.instanceOf(error, ParleyError.SessionNotFound)
      assert.strictEqual(error.sessionId, "ses_9")
    }))
})
