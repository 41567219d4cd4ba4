/**
 * A request's body is judged after the session its path names (issue 35, point 7), over plain HTTP against a real
 * server on 127.0.0.1: with a wrong session id and a malformed body, the server answers 404 `SessionNotFound` as the
 * in-process transport does (it looks the session up first), and an unknown session's 404 is byte for byte another
 * tenant's. The tenant's own session with the same body gets its 400, and nothing changes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, CallbackHandler, Session, Turn } from "@parley/core"
import type { TurnState } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

describe("what a request is judged on first", () => {
  it.effect(
    "a malformed body to an unknown or foreign session is its 404, the same bytes; to one's own a 400",
    () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.fromFunction(brain)
        const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, { runtimeTools: [] })
        const blockedOf = (key: string) =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(locator)
            const turn = yield* Session.sendMessage(session, "Where am I?")
            return (yield* Turn.result(turn).pipe(Effect.provide(CallbackHandler.layer({})))) as TurnState.Blocked
          }).pipe(Effect.provide(HttpTransport.layer({ url, apiKey: Redacted.make(key) })))
        const mine = yield* blockedOf(keys.alice)
        const bobs = yield* blockedOf(keys.bob)
        assert.strictEqual(mine._tag, "Blocked")
        assert.strictEqual(bobs._tag, "Blocked")
        const unknown = "ses_0123456789abcdef0123"
        const answerPath = (blocked: TurnState.Blocked, sessionId: string) =>
          `/sessions/${sessionId}/turns/${blocked.turnId}/callbacks/${blocked.callbacks[0].id}/answer`
        const post = (path: string, body: unknown) =>
          request(`${url}${path}`, { method: "POST", key: keys.alice, body })

        for (const body of [{ _tag: "AllowApproval", remeber: "session" }, { _tag: "Approve" }, 42, { input: 7 }]) {
          const what = JSON.stringify(body)
          // An answer: to an unknown session, to another tenant's (its real path), to one's own.
          const toUnknown = yield* post(answerPath(mine, unknown), body)
          const toForeign = yield* post(answerPath(bobs, bobs.sessionId), body)
          const foreignAsUnknown = yield* post(answerPath(bobs, unknown), body)
          assert.strictEqual(toUnknown.status, 404, what)
          assert.strictEqual((toUnknown.json as { _tag: string })._tag, "SessionNotFound", what)
          assert.strictEqual(toForeign.status, 404, what)
          // The same bytes, but for the id each names.
          assert.strictEqual(toForeign.text.replaceAll(bobs.sessionId, unknown), foreignAsUnknown.text, what)
          assert.strictEqual(toForeign.text.replaceAll(bobs.sessionId, unknown), toUnknown.text, what)
          const toMine = yield* post(answerPath(mine, mine.sessionId), body)
          assert.strictEqual(toMine.status, 400, what)
          assert.strictEqual((toMine.json as { _tag: string })._tag, "HttpApiDecodeError", what)
          // A message: the same order.
          const sendUnknown = yield* post(`/sessions/${unknown}/turns`, body)
          const sendForeign = yield* post(`/sessions/${bobs.sessionId}/turns`, body)
          assert.strictEqual(sendUnknown.status, 404, what)
          assert.strictEqual(sendForeign.text.replaceAll(bobs.sessionId, unknown), sendUnknown.text, what)
          const sendMine = yield* post(`/sessions/${mine.sessionId}/turns`, body)
          assert.strictEqual(sendMine.status, 400, what)
        }
        // A well-formed answer to an unknown session: the same 404 as with a malformed one.
        const wellFormed = yield* post(answerPath(mine, unknown), { _tag: "AllowApproval" })
        assert.strictEqual(wellFormed.status, 404)
        assert.strictEqual(wellFormed.text, (yield* post(answerPath(mine, unknown), 42)).text)
        // Nothing changed: both callbacks are still open.
        for (const [key, blocked] of [[keys.alice, mine], [keys.bob, bobs]] as const) {
          const open = yield* request(`${url}/callbacks?sessionId=${blocked.sessionId}`, { key })
          assert.deepStrictEqual(
            (open.json as Array<{ callback: { id: string } }>).map((entry) => entry.callback.id),
            [blocked.callbacks[0].id]
          )
        }
      }),
    { timeout: 120_000 }
  )
})
