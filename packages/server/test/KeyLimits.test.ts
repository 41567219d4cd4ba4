/**
 * Each API key is held to the server's limits on requests (issue 35, point 2), over HTTP against a real server on
 * 127.0.0.1: so many requests in flight at once (long polls included, event streams counted apart), so many sessions
 * started a minute. One more is a 429 `TooManyRequests` with `Retry-After` that does nothing; other keys go on.
 */
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"
import { locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** A server whose model never answers: a turn runs until the test ends, so a long poll on it waits. */
const server = (limits: { readonly maxRequestsPerKey?: number; readonly maxSessionsPerMinute?: number }) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(() => Effect.never)
    return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
      runtimeTools: [],
      server: { agents: [locator.spec], ...limits }
    })
  })

const post = (url: string, key: string, body: unknown) => request(url, { method: "POST", key, body })

/** A GET that the test abandons when `signal` aborts (its status, or 0 when abandoned). */
const pending = (url: string, key: string, signal: AbortSignal) =>
  fetch(url, { headers: { authorization: `Bearer ${key}` }, signal }).then(
    (response) => response.status,
    () => 0
  )

describe("limits per key", () => {
  it.live("requests in flight: one over the limit is a 429 with Retry-After; another key is served; slots free", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxRequestsPerKey: 3 })
      const sessionId = ((yield* post(`${base}/sessions`, keys.alice, { name: "locator" })).json as {
        sessionId: string
      }).sessionId
      const turnId = ((yield* post(`${base}/sessions/${sessionId}/turns`, keys.alice, { input: "Where?" })).json as {
        turnId: string
      }).turnId
      const controller = new AbortController()
      const wait = `${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=60`
      const polls = [1, 2, 3].map(() => pending(wait, keys.alice, controller.signal))
      // The three long polls hold the key's three slots once the server has them: the fourth request is refused.
      const refused = yield* Effect.gen(function*() {
        for (let attempt = 0; attempt < 200; attempt++) {
          const reply = yield* request(`${base}/sessions`, { key: keys.alice })
          if (reply.status === 429) return reply
          yield* Effect.sleep("25 millis")
        }
        return assert.fail("the fourth request was never refused")
      })
      assert.strictEqual(refused.headers["retry-after"], "1")
      assert.deepStrictEqual(refused.json, { _tag: "TooManyRequests", what: "requests", limit: 3, retryAfter: 1 })
      const turn = yield* post(`${base}/sessions/${sessionId}/turns`, keys.alice, { input: "Again?" })
      assert.strictEqual(turn.status, 429, "a refused send queues nothing")
      assert.strictEqual(
        (yield* request(`${base}/sessions`, { key: keys.bob })).status,
        200,
        "bob has slots of his own"
      )
      // The polls end (their clients go away): the slots are free again.
      controller.abort()
      assert.deepStrictEqual(yield* Effect.promise(() => Promise.all(polls)), [0, 0, 0])
      const served = yield* Effect.gen(function*() {
        for (let attempt = 0; attempt < 200; attempt++) {
          const reply = yield* request(`${base}/sessions/${sessionId}`, { key: keys.alice })
          if (reply.status !== 429) return reply
          yield* Effect.sleep("25 millis")
        }
        return assert.fail("the slots never came back")
      })
      assert.strictEqual(served.status, 200, served.text)
      const log = yield* request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice })
      assert.strictEqual(
        (log.text.match(/event: TurnQueued/g) ?? []).length,
        1,
        "the refused send queued no turn"
      )
    }))

  it.live("sessions a minute: one over is a 429 with the seconds to wait, and starts nothing", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxSessionsPerMinute: 2 })
      for (const n of [1, 2]) {
        assert.strictEqual((yield* post(`${base}/sessions`, keys.alice, { name: "locator" })).status, 201, `start ${n}`)
      }
      const refused = yield* post(`${base}/sessions`, keys.alice, { name: "locator" })
      assert.strictEqual(refused.status, 429, refused.text)
      const body = refused.json as { _tag: string; what: string; limit: number; retryAfter: number }
      assert.deepStrictEqual([body._tag, body.what, body.limit], ["TooManyRequests", "sessions", 2])
      assert.isTrue(body.retryAfter >= 1 && body.retryAfter <= 60, String(body.retryAfter))
      assert.strictEqual(refused.headers["retry-after"], String(body.retryAfter))
      const listed = (yield* request(`${base}/sessions`, { key: keys.alice })).json as { sessions: Array<unknown> }
      assert.strictEqual(listed.sessions.length, 2, "the refused start created nothing")
      assert.strictEqual((yield* post(`${base}/sessions`, keys.bob, { name: "locator" })).status, 201)
    }))
})
