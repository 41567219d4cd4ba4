/**
 * Every request body gets an answer that names what was wrong with it (issue 35, points 2 and 3), over HTTP against
 * a real server on 127.0.0.1: a value nested deeper than `maxJsonDepth` is a 400 naming where (before Schema sees
 * it: a client tool's 5,000-deep failure result was a 503 and a schema trace), a body of another media type a 415
 * whatever it holds, and a chunked body over the limit a 413 the client reads, however slowly it sends.
 */
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { brain, locator } from "./fixtures/agents.js"
import { request, storedLog } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const server = Effect.gen(function*() {
  const model = yield* ScriptedModel.fromFunction(brain)
  return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
    runtimeTools: [],
    server: { agents: [locator.spec] }
  })
})

const post = (url: string, body: unknown) => request(url, { method: "POST", key: keys.alice, body })

/** A turn of the served locator blocked on its client tool call (its approval answered). */
const clientToolCall = (base: string) =>
  Effect.gen(function*() {
    const sessionId = ((yield* post(`${base}/sessions`, { name: "locator" })).json as { sessionId: string }).sessionId
    const turnId = ((yield* post(`${base}/sessions/${sessionId}/turns`, { input: "Where am I?" })).json as {
      turnId: string
    }).turnId
    const wait = `${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=20`
    const callbacksOf = (reply: { json: unknown }) =>
      (reply.json as { state: { callbacks: Array<{ id: string; _tag: string }> } }).state.callbacks
    const approval = callbacksOf(yield* request(wait, { key: keys.alice }))[0]
    const turn = `${base}/sessions/${sessionId}/turns/${turnId}`
    const allowed = yield* post(`${turn}/callbacks/${approval.id}/answer`, { _tag: "AllowApproval" })
    assert.strictEqual(allowed.status, 204, allowed.text)
    const call = callbacksOf(yield* request(wait, { key: keys.alice }))[0]
    assert.strictEqual(call._tag, "OpenClientToolCall")
    return { sessionId, answer: `${turn}/callbacks/${call.id}/answer` }
  })

/** `depth` arrays around `1`, written out (`JSON.stringify` itself overflows on deep values). */
const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`

/** A POST sent with `Transfer-Encoding: chunked`, `chunks` pieces of `size` bytes each after a pause: its status. */
const chunked = (url: string, chunks: number, size: number) =>
  Effect.promise(() =>
    new Promise<{ status: number | string; body: string }>((resolve) => {
      const target = new URL(url)
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers: {
          authorization: `Bearer ${keys.alice}`,
          "content-type": "application/json",
          "transfer-encoding": "chunked"
        }
      }, (response) => {
        let body = ""
        response.on("data", (data: Buffer) => (body += data.toString()))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
      })
      req.on("error", (error) => resolve({ status: `error: ${error.message}`, body: "" }))
      req.write("{\"input\":\"")
      const piece = "x".repeat(size)
      let sent = 0
      const next = () => {
        if (sent === chunks || req.destroyed) return req.end("\"}")
        sent++
        req.write(piece, () => setTimeout(next, 2))
      }
      next()
    })
  )

describe("bounded request bodies", () => {
  it.live("a client tool's result nested 5,000 deep is a 400 naming where; the call stays open, the log unchanged", () =>
    Effect.gen(function*() {
      const base = yield* server
      const { answer, sessionId } = yield* clientToolCall(base)
      const before = yield* storedLog(base, keys.alice, sessionId)
      for (const body of [nested(5_000), `${"{\"a\":".repeat(5_000)}1${"}".repeat(5_000)}`]) {
        const reply = yield* request(answer, {
          method: "POST",
          key: keys.alice,
          raw: `{"_tag":"ClientToolResult","isFailure":true,"result":${body}}`
        })
        assert.strictEqual(reply.status, 400, reply.text)
        const refusal = reply.json as { _tag: string; issues: Array<{ path: Array<string | number>; message: string }> }
        assert.strictEqual(refusal._tag, "HttpApiDecodeError")
        assert.strictEqual(refusal.issues[0].message, "the body nests deeper than the server accepts (64 levels)")
        assert.strictEqual(refusal.issues[0].path[0], "result")
        assert.isAtMost(refusal.issues[0].path.length, 8, "the path is cut short")
        assert.isBelow(reply.text.length, 1_000)
      }
      // The path names the keys (unescaped) and indices that lead to the level past the limit.
      const located = yield* request(answer, {
        method: "POST",
        key: keys.alice,
        raw: `{"_tag":"ClientToolResult","isFailure":true,"result":{"skip":[[1]],"a\\"b":[1,{"c":2},${nested(80)}]}}`
      })
      assert.strictEqual(located.status, 400, located.text)
      assert.deepStrictEqual(
        (located.json as { issues: Array<{ path: Array<string | number> }> }).issues[0].path,
        ["result", "a\"b", 2, 0, 0, 0, 0, 0]
      )
      assert.deepStrictEqual(yield* storedLog(base, keys.alice, sessionId), before)
      // A result well inside the limit is the call's answer, however many brackets its strings hold.
      const accepted = yield* request(answer, {
        method: "POST",
        key: keys.alice,
        raw: `{"_tag":"ClientToolResult","isFailure":true,"result":[${nested(60)},"${"[".repeat(5_000)}\\"{{"]}`
      })
      assert.strictEqual(accepted.status, 204, accepted.text)
    }))

  it.live("deep values anywhere: a message, a definition, the body itself — each a 400 that changes nothing", () =>
    Effect.gen(function*() {
      const base = yield* server
      const sessionId = ((yield* post(`${base}/sessions`, { name: "locator" })).json as { sessionId: string })
        .sessionId
      const before = yield* storedLog(base, keys.alice, sessionId)
      const cases: ReadonlyArray<readonly [string, string]> = [
        [`/sessions/${sessionId}/turns`, `{"input":${nested(3_000)}}`],
        ["/sessions", `{"name":"locator","permissions":${nested(3_000)}}`],
        ["/sessions", nested(100_000)]
      ]
      for (const [path, raw] of cases) {
        const reply = yield* request(`${base}${path}`, { method: "POST", key: keys.alice, raw })
        assert.strictEqual(reply.status, 400, `${path}: ${reply.text.slice(0, 200)}`)
        assert.include(reply.text, "nests deeper than the server accepts", path)
      }
      assert.deepStrictEqual(yield* storedLog(base, keys.alice, sessionId), before)
      const sessions = (yield* request(`${base}/sessions`, { key: keys.alice })).json as { sessions: Array<unknown> }
      assert.strictEqual(sessions.sessions.length, 1, "no session was created")
    }))

  it.live("a body of another media type is a 415 whatever it holds, JSON or not", () =>
    Effect.gen(function*() {
      const base = yield* server
      const sessionId = ((yield* post(`${base}/sessions`, { name: "locator" })).json as { sessionId: string })
        .sessionId
      for (const type of ["multipart/form-data; boundary=x", "multipart/form-data", "application/xml", "garbage"]) {
        for (const raw of ["--x\r\n\r\nnot json\r\n--x--", "<input/>", "{\"input\":\"hi\"}"]) {
          const reply = yield* request(`${base}/sessions/${sessionId}/turns`, {
            method: "POST",
            key: keys.alice,
            raw,
            headers: { "content-type": type }
          })
          assert.strictEqual(reply.status, 415, `${type}, ${raw}: ${reply.text}`)
        }
      }
      // The media type is read as HTTP says: case and parameters aside.
      const sent = yield* request(`${base}/sessions/${sessionId}/turns`, {
        method: "POST",
        key: keys.alice,
        raw: "{\"input\":\"hi\"}",
        headers: { "content-type": "Application/JSON; charset=utf-8" }
      })
      assert.strictEqual(sent.status, 202, sent.text)
    }))

  it.live("a chunked body over the limit, sent slowly, gets its 413 — not a reset — and the server answers on", () =>
    Effect.gen(function*() {
      const base = yield* server
      const sessionId = ((yield* post(`${base}/sessions`, { name: "locator" })).json as { sessionId: string })
        .sessionId
      // 3 MiB in 48 chunks against the default limit of 1 MiB.
      const reply = yield* chunked(`${base}/sessions/${sessionId}/turns`, 48, 64 * 1024)
      assert.strictEqual(reply.status, 413, reply.body)
      assert.deepStrictEqual(JSON.parse(reply.body), { _tag: "PayloadTooLarge", limit: 1024 * 1024 })
      const within = yield* chunked(`${base}/sessions/${sessionId}/turns`, 1, 64 * 1024)
      assert.strictEqual(within.status, 202, within.body.slice(0, 200))
    }))
})
