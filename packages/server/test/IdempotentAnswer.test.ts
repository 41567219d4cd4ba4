/**
 * Answers that lose their response: a proxy in front of a real server lets each `POST …/answer` reach the server (the
 * answer is committed) and then loses the response (the connection reset, a gateway's 503, no response at all).
 * `HttpTransport` sends the POST again with the same request id, the server accepts the retry of the answer that won,
 * and the caller's `Turn.answer` succeeds — where it used to fail (a `TransportFailure` on the drop, and a retry by
 * hand got `CallbackAlreadyAnswered` for an answer that had won). The log holds one resolution.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { Effect } from "effect"
import { locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { behindProxy, createSession, locatorServer, lossCases } from "./fixtures/lossy.js"
import { keys } from "./fixtures/servers.js"

interface Stored {
  readonly _tag: string
  readonly seq: number
  readonly callbackId?: string
  readonly requestId?: string
  readonly answer?: { readonly _tag: string }
}

/** The stored events of the session (read straight from the server, not through the proxy). */
const storedEvents = (base: string, sessionId: string) =>
  Effect.map(
    request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice }),
    (reply) =>
      reply.text.split("\n").filter((line) => line.startsWith("data:")).map((line) =>
        JSON.parse(line.slice(5)) as Stored
      )
  )

const resolutionsOf = (events: ReadonlyArray<Stored>, callbackId: string) =>
  events.filter((event) => event._tag === "CallbackResolved" && event.callbackId === callbackId)

describe("HttpTransport.answer: a lost response is sent again with its request id", () => {
  for (const [how, what] of lossCases) {
    it.live(
      `${what}: Turn.answer succeeds, one CallbackResolved, the turn goes on`,
      () =>
        Effect.gen(function*() {
          const base = yield* locatorServer
          const { proxy, transport } = yield* behindProxy(base)
          const { approval, next, turn } = yield* Effect.gen(function*() {
            const session = yield* Agent.startSession(locator)
            const turn = yield* Session.sendMessage(session, "Where am I?")
            const blocked = yield* Turn.result(turn)
            if (blocked._tag !== "Blocked") return yield* Effect.die(`not blocked: ${blocked._tag}`)
            const approval = blocked.callbacks[0]
            // The first two responses are lost: the transport sends the POST a third time.
            yield* proxy.loseAnswers(2, how)
            yield* Turn.answer(turn, approval.id, new Answer.AllowApproval())
            return { approval, turn, next: yield* Turn.result(turn, { after: blocked }) }
          }).pipe(Effect.provide(transport))

          assert.strictEqual(yield* proxy.lost, 2, "two responses were lost")
          const resolved = resolutionsOf(yield* storedEvents(base, turn.sessionId), approval.id)
          assert.strictEqual(resolved.length, 1, "exactly one CallbackResolved")
          assert.strictEqual(resolved[0].answer?._tag, "AllowApproval")
          assert.match(resolved[0].requestId ?? "", /^req_/, "the transport made a request id up")
          // The approval let the call through: the turn now waits on the client tool's result.
          assert.strictEqual(next._tag, "Blocked")
          if (next._tag === "Blocked") assert.strictEqual(next.callbacks[0]?._tag, "OpenClientToolCall")
        }),
      { timeout: 30_000 }
    )
  }

  it.live("over plain HTTP: a repeat of the winner's requestId is a 204, another answer a 409, a bad id a 400", () =>
    Effect.gen(function*() {
      const base = yield* locatorServer
      const sessionId = yield* createSession(base)
      const sent = yield* request(`${base}/sessions/${sessionId}/turns`, {
        method: "POST",
        key: keys.alice,
        body: { input: "Where am I?" }
      })
      const turnId = (sent.json as { readonly turnId: string }).turnId
      const waited = yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=10`, {
        key: keys.alice
      })
      const callbackId = (waited.json as { readonly callbacks: ReadonlyArray<{ readonly id: string }> }).callbacks[0].id
      const answer = (query: string, body: unknown = { _tag: "AllowApproval" }) =>
        request(`${base}/sessions/${sessionId}/turns/${turnId}/callbacks/${callbackId}/answer${query}`, {
          method: "POST",
          key: keys.alice,
          body
        })

      const refused = yield* answer("?requestId=two%20words")
      assert.strictEqual(refused.status, 400)
      assert.strictEqual((refused.json as { readonly _tag: string })._tag, "InvalidId")
      assert.deepStrictEqual(resolutionsOf(yield* storedEvents(base, sessionId), callbackId), [], "nothing answered")

      const first = yield* answer("?requestId=curl-1")
      const again = yield* answer("?requestId=curl-1", { _tag: "DenyApproval" })
      assert.deepStrictEqual([first.status, again.status], [204, 204])
      const other = yield* answer("?requestId=curl-2", { _tag: "DenyApproval" })
      const none = yield* answer("", { _tag: "DenyApproval" })
      for (const reply of [other, none]) {
        assert.strictEqual(reply.status, 409)
        assert.strictEqual((reply.json as { readonly _tag: string })._tag, "CallbackAlreadyAnswered")
      }
      const resolved = resolutionsOf(yield* storedEvents(base, sessionId), callbackId)
      assert.strictEqual(resolved.length, 1)
      assert.deepStrictEqual([resolved[0].answer?._tag, resolved[0].requestId], ["AllowApproval", "curl-1"])
    }))
})
