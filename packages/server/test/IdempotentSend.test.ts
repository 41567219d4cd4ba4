/**
 * Sends that lose their response: a proxy in front of a real server lets each `POST …/turns` reach the server (the
 * turn is queued) and then loses the answer (the connection reset, a gateway's 503, no answer at all). `HttpTransport`
 * sends the POST again with the same request id, and the caller's `TurnRef` is the one turn in the log.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Ids, Session, Turn } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { HttpClient } from "effect/http"
import { locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { behindProxy, createSession, fast, locatorServer, lossCases } from "./fixtures/lossy.js"
import { startProxy } from "./fixtures/proxy.js"
import { keys } from "./fixtures/servers.js"

/** The `TurnQueued`s the server stored for the session (read straight from the server, not through the proxy). */
const queuedTurns = (base: string, sessionId: string) =>
  Effect.map(
    request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice }),
    (reply) =>
      reply.text.split("\n").filter((line) => line.startsWith("data:")).map((line) =>
        JSON.parse(line.slice(5)) as { readonly _tag: string; readonly turnId: string; readonly seq: number }
      ).filter((event) => event._tag === "TurnQueued").map((event) => ({
        turnId: event.turnId,
        seq: event.seq,
        requestId: (event as { readonly requestId?: string }).requestId
      }))
  )

describe("HttpTransport.sendMessage: a lost response is sent again with its request id", () => {
  for (const [how, what] of lossCases) {
    it.live(`${what}: one TurnQueued, and the caller's TurnRef is it`, () =>
      Effect.gen(function*() {
        const base = yield* locatorServer
        const { proxy, transport } = yield* behindProxy(base)
        const { blocked, turn } = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(locator)
          // The first two answers are lost: the transport sends the POST a third time.
          yield* proxy.loseSends(2, how)
          const turn = yield* Session.sendMessage(session, "Where am I?")
          return { turn, blocked: yield* Turn.result(turn) }
        }).pipe(Effect.provide(transport))

        assert.strictEqual(yield* proxy.lost, 2, "two responses were lost")
        const queued = yield* queuedTurns(base, turn.sessionId)
        assert.strictEqual(queued.length, 1, "exactly one TurnQueued")
        assert.deepStrictEqual([turn.turnId, turn.cursor], [queued[0].turnId, queued[0].seq])
        assert.match(queued[0].requestId ?? "", /^req_/, "the transport made a request id up")
        assert.strictEqual(blocked._tag, "Blocked", "the turn runs as usual: it asks for its approval")
      }), { timeout: 30_000 })
  }

  it.live("the caller's own request id is the one the server records, and a later retry finds the turn", () =>
    Effect.gen(function*() {
      const base = yield* locatorServer
      const proxy = yield* startProxy(base)
      const transport = HttpTransport.layer({ url: proxy.url, apiKey: Redacted.make(keys.alice), reconnect: fast })
      const { again, first } = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(locator)
        yield* proxy.loseSends(1, "reset")
        const first = yield* Session.sendMessage(session, "Where am I?", { requestId: "order-42" })
        // The program itself retries later (say, after its own restart): the same turn.
        const again = yield* Session.sendMessage(session, "Where am I?", { requestId: "order-42" })
        return { first, again }
      }).pipe(Effect.provide(transport))
      assert.deepStrictEqual([again.turnId, again.cursor], [first.turnId, first.cursor])
      assert.deepStrictEqual(yield* queuedTurns(base, first.sessionId), [
        { turnId: first.turnId, seq: first.cursor, requestId: "order-42" }
      ])
    }))

  it.live("a server that cannot be reached: sent again for sendRetryFor, then a TransportFailure", () =>
    Effect.gen(function*() {
      let attempts = 0
      const transport = HttpTransport.layer({
        url: "http://127.0.0.1:9",
        apiKey: Redacted.make(keys.alice),
        reconnect: fast,
        sendRetryFor: "400 millis",
        transformClient: HttpClient.tapRequest(() => Effect.sync(() => void attempts++))
      })
      const session = Session.make({ id: Ids.SessionId.make("ses_unreachable"), handler: undefined })
      const started = Date.now()
      const error = yield* Effect.flip(Session.sendMessage(session, "Anyone?")).pipe(Effect.provide(transport))
      assert.strictEqual(error._tag, "TransportFailure")
      assert.isAbove(attempts, 1, "the POST was sent again")
      assert.isBelow(Date.now() - started, 5_000, "and given up on")
    }))

  it.live("over plain HTTP: a malformed requestId is a 400 InvalidId and queues nothing; a repeat is a 202", () =>
    Effect.gen(function*() {
      const base = yield* locatorServer
      const sessionId = yield* createSession(base)
      const send = (body: unknown) =>
        request(`${base}/sessions/${sessionId}/turns`, { method: "POST", key: keys.alice, body })
      const refused = yield* send({ input: "Where am I?", requestId: "two words" })
      assert.strictEqual(refused.status, 400)
      assert.strictEqual((refused.json as { readonly _tag: string })._tag, "InvalidId")
      assert.deepStrictEqual(yield* queuedTurns(base, sessionId), [])
      const first = yield* send({ input: "Where am I?", requestId: "curl-1" })
      const again = yield* send({ input: "Where am I?", requestId: "curl-1" })
      assert.deepStrictEqual([first.status, again.status], [202, 202])
      assert.deepStrictEqual(again.json, first.json)
      assert.strictEqual((yield* queuedTurns(base, sessionId)).length, 1)
    }))
})
