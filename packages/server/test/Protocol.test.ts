/**
 * The protocol as a client in another language sees it (plain `fetch`): keys and tenants, typed errors with one
 * status each, limits, and refused requests that change no log.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Effect, Logger, References, Schema } from "effect"
import { keyIdOf } from "../src/internal/auth.js"
import { brain, locator } from "./fixtures/agents.js"
import { request, storedLog } from "./fixtures/http.js"
import type { RuntimeOptions } from "./fixtures/servers.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const server = (options?: RuntimeOptions["server"]) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    const filename = yield* Effect.orDie(sqliteFile)
    return yield* startServer(sqliteDatabase(filename), model.languageModel, { runtimeTools: [], server: options })
  })

interface Blocked {
  readonly sessionId: string
  readonly turnId: string
  readonly callbackId: string
}

/** Alice's session, blocked on the approval of get_location: all over plain HTTP. */
const blockedSession = (base: string) =>
  Effect.gen(function*() {
    const created = yield* request(`${base}/sessions`, {
      method: "POST",
      key: keys.alice,
      body: Schema.encodeSync(AgentSpec.AgentSpec)(locator.spec)
    })
    assert.strictEqual(created.status, 201, created.text)
    const sessionId = (created.json as { sessionId: string }).sessionId
    const sent = yield* request(`${base}/sessions/${sessionId}/turns`, {
      method: "POST",
      key: keys.alice,
      body: { input: "Where am I?" }
    })
    assert.strictEqual(sent.status, 202, sent.text)
    const turnId = (sent.json as { turnId: string }).turnId
    const waited = yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=20`, { key: keys.alice })
    const state = (waited.json as { state?: { _tag: string; callbacks: Array<{ id: string; kind: string }> } }).state
    assert.strictEqual(state?._tag, "Blocked", waited.text)
    return { sessionId, turnId, callbackId: state!.callbacks[0].id } satisfies Blocked
  })

const unknownSession = Effect.runSync(Ids.newSessionId)
const unknownTurn = Effect.runSync(Ids.newTurnId)
const unknownCallback = Effect.runSync(Ids.newCallbackId)

describe("ParleyServer: keys and tenants", () => {
  it.live("no key or a wrong key → 401 on every API route; /openapi.json and /docs are public", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const { callbackId, sessionId, turnId } = yield* blockedSession(base)
      const routes: ReadonlyArray<readonly [string, string, unknown?]> = [
        ["GET", "/sessions"],
        ["POST", "/sessions", {}],
        ["GET", `/sessions/${sessionId}`],
        ["POST", `/sessions/${sessionId}/cancel`],
        ["POST", `/sessions/${sessionId}/turns`, { input: "hi" }],
        ["GET", `/sessions/${sessionId}/turns/${turnId}`],
        ["GET", `/sessions/${sessionId}/turns/${turnId}/wait?timeout=0`],
        ["GET", `/sessions/${sessionId}/events?live=false`],
        ["GET", "/callbacks"],
        ["POST", `/sessions/${sessionId}/turns/${turnId}/callbacks/${callbackId}/answer`, { _tag: "AllowApproval" }]
      ]
      for (const key of [undefined, "wrong-key", `${keys.alice}x`, keys.alice.slice(0, -1), ""]) {
        for (const [method, path, body] of routes) {
          const reply = yield* request(`${base}${path}`, { method, key, body })
          assert.strictEqual(reply.status, 401, `${method} ${path} with key ${String(key)}`)
          assert.strictEqual((reply.json as { _tag: string })._tag, "Unauthorized")
        }
      }
      const log = yield* storedLog(base, keys.alice, sessionId)
      assert.isFalse(log.some((entry) => entry.endsWith("CancelRequested") || entry.endsWith("CallbackResolved")))
      const openapi = yield* request(`${base}/openapi.json`)
      assert.strictEqual(openapi.status, 200)
      assert.include(Object.keys((openapi.json as { paths: object }).paths), "/sessions/{sessionId}/events")
      const docs = yield* request(`${base}/docs`)
      assert.strictEqual(docs.status, 200)
      assert.include(docs.text, "<html")
    }))

  it.live("another tenant's session, turn and callback answer 404 exactly like unknown ids", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const alice = yield* blockedSession(base)
      const before = yield* storedLog(base, keys.alice, alice.sessionId)
      /** The reply for Alice's ids and for unknown ids, both asked by Bob: the same but for the id. */
      const same = (method: string, path: (ids: Blocked) => string, body?: unknown) =>
        Effect.gen(function*() {
          const foreign = yield* request(`${base}${path(alice)}`, { method, key: keys.bob, body })
          const unknown = yield* request(
            `${base}${path({ sessionId: unknownSession, turnId: unknownTurn, callbackId: unknownCallback })}`,
            { method, key: keys.bob, body }
          )
          assert.strictEqual(foreign.status, 404, `${method} ${path(alice)}: ${foreign.text}`)
          assert.strictEqual(unknown.status, 404, `${method} unknown: ${unknown.text}`)
          assert.strictEqual(
            foreign.text.replaceAll(alice.sessionId, "ID"),
            unknown.text.replaceAll(unknownSession, "ID")
          )
        })
      yield* same("GET", (ids) => `/sessions/${ids.sessionId}`)
      yield* same("POST", (ids) => `/sessions/${ids.sessionId}/cancel`)
      yield* same("POST", (ids) => `/sessions/${ids.sessionId}/turns`, { input: "Where is Alice?" })
      yield* same("GET", (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}`)
      yield* same("GET", (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}/wait?timeout=0`)
      yield* same("GET", (ids) => `/sessions/${ids.sessionId}/events?live=false`)
      yield* same(
        "POST",
        (ids) => `/sessions/${ids.sessionId}/turns/${ids.turnId}/callbacks/${ids.callbackId}/answer`,
        { _tag: "AllowApproval" }
      )
      // Bob sees none of Alice's sessions or callbacks.
      const bobSessions = yield* request(`${base}/sessions`, { key: keys.bob })
      assert.deepStrictEqual(bobSessions.json, { sessions: [] })
      const bobCallbacks = yield* request(`${base}/callbacks`, { key: keys.bob })
      assert.deepStrictEqual(bobCallbacks.json, [])
      const filtered = yield* request(`${base}/callbacks?sessionId=${alice.sessionId}`, { key: keys.bob })
      assert.deepStrictEqual(filtered.json, [])
      // Alice sees hers, and nothing changed.
      const aliceCallbacks = yield* request(`${base}/callbacks`, { key: keys.alice })
      const open = aliceCallbacks.json as Array<{ callback: { id: string }; answerSchema: object }>
      assert.deepStrictEqual(open.map((entry) => entry.callback.id), [alice.callbackId])
      assert.deepStrictEqual(yield* storedLog(base, keys.alice, alice.sessionId), before)
      const aliceSessions = yield* request(`${base}/sessions`, { key: keys.alice })
      assert.deepStrictEqual(
        (aliceSessions.json as { sessions: Array<{ sessionId: string }> }).sessions.map((s) => s.sessionId),
        [alice.sessionId]
      )
    }))
})

describe("ParleyServer: bad input", () => {
  it.live("malformed JSON, wrong answers, unknown ids, oversized bodies: typed 4xx, no change to the log", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxBodyBytes: 64 * 1024, maxMessageLength: 1000 })
      const { callbackId, sessionId, turnId } = yield* blockedSession(base)
      const before = yield* storedLog(base, keys.alice, sessionId)
      const answerPath = (callback: string, turn = turnId) =>
        `/sessions/${sessionId}/turns/${turn}/callbacks/${callback}/answer`
      const cases: ReadonlyArray<
        readonly [string, string, string, { body?: unknown; raw?: string }, number, string | undefined]
      > = [
        ["malformed JSON (create)", "POST", "/sessions", { raw: "{\"name\": " }, 400, "HttpApiDecodeError"],
        ["malformed JSON (answer)", "POST", answerPath(callbackId), { raw: "{{" }, 400, "HttpApiDecodeError"],
        ["no answer at all", "POST", answerPath(callbackId), { body: { _tag: "Nope" } }, 400, "HttpApiDecodeError"],
        [
          "a client tool result to an approval",
          "POST",
          answerPath(callbackId),
          {
            body: { _tag: "ClientToolResult", isFailure: false, result: { city: "Lyon" } }
          },
          422,
          "AnswerMismatch"
        ],
        [
          "an approval whose edited arguments do not fit the tool's parameters",
          "POST",
          answerPath(callbackId),
          { body: { _tag: "AllowApproval", arguments: "everywhere" } },
          422,
          "AnswerMismatch"
        ],
        [
          "a sign-in answer to an approval",
          "POST",
          answerPath(callbackId),
          {
            body: { _tag: "SignInAnswer", connected: [], denied: [] }
          },
          422,
          "AnswerMismatch"
        ],
        [
          "an unknown callback",
          "POST",
          answerPath(unknownCallback),
          { body: { _tag: "AllowApproval" } },
          409,
          "CallbackNotOpen"
        ],
        [
          "an unknown turn",
          "POST",
          answerPath(callbackId, unknownTurn),
          { body: { _tag: "AllowApproval" } },
          404,
          "TurnNotFound"
        ],
        ["an unknown turn (get)", "GET", `/sessions/${sessionId}/turns/${unknownTurn}`, {}, 404, "TurnNotFound"],
        ["a malformed id", "GET", `/sessions/not-an-id`, {}, 400, "HttpApiDecodeError"],
        [
          "an invalid agent",
          "POST",
          "/sessions",
          { body: { name: "x", model: "m", tools: 5 } },
          400,
          "HttpApiDecodeError"
        ],
        [
          "an agent with a connector the server lacks",
          "POST",
          "/sessions",
          { body: { ...Schema.encodeSync(AgentSpec.AgentSpec)(locator.spec), connectors: ["nowhere"] } },
          400,
          "AgentInvalid"
        ],
        [
          "a message too long",
          "POST",
          `/sessions/${sessionId}/turns`,
          { body: { input: "x".repeat(1001) } },
          413,
          "MessageTooLong"
        ],
        [
          "an oversized body",
          "POST",
          answerPath(callbackId),
          {
            body: { _tag: "DenyApproval", reason: "x".repeat(100 * 1024) }
          },
          413,
          "PayloadTooLarge"
        ],
        [
          "an oversized message",
          "POST",
          `/sessions/${sessionId}/turns`,
          { body: { input: "x".repeat(70 * 1024) } },
          413,
          "PayloadTooLarge"
        ]
      ]
      for (const [name, method, path, body, status, tag] of cases) {
        const reply = yield* request(`${base}${path}`, { method, key: keys.alice, ...body })
        assert.strictEqual(reply.status, status, `${name}: ${reply.text.slice(0, 300)}`)
        if (tag !== undefined) {
          assert.strictEqual(
            (reply.json as { _tag?: string } | undefined)?._tag,
            tag,
            `${name}: ${reply.text.slice(0, 300)}`
          )
        }
      }
      assert.deepStrictEqual(yield* storedLog(base, keys.alice, sessionId), before)
      // The typed answer goes through, once: a second one is a 409.
      const allowed = yield* request(`${base}${answerPath(callbackId)}`, {
        method: "POST",
        key: keys.alice,
        body: { _tag: "AllowApproval" }
      })
      assert.strictEqual(allowed.status, 204, allowed.text)
      // The log says who answered: the API key the request was made with (its id, never the key), and its tenant.
      const log = yield* request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice })
      const resolved = log.text.split("\n").filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)) as { _tag: string; callbackId?: string; answeredBy?: unknown })
        .find((event) => event._tag === "CallbackResolved" && event.callbackId === callbackId)
      assert.deepStrictEqual(resolved?.answeredBy, {
        _tag: "ApiKey",
        tenant: "alice",
        keyId: keyIdOf(keys.alice),
        onBehalfOf: { _tag: "Client" }
      })
      assert.notInclude(log.text, keys.alice)
      const again = yield* request(`${base}${answerPath(callbackId)}`, {
        method: "POST",
        key: keys.alice,
        body: { _tag: "DenyApproval" }
      })
      assert.strictEqual(again.status, 409, again.text)
      // with the winning answer's resolution
      const body = JSON.parse(again.text) as { readonly _tag: string; readonly answer?: unknown }
      assert.strictEqual(body._tag, "CallbackAlreadyAnswered")
      assert.deepStrictEqual(body.answer, { _tag: "AllowApproval" })
    }))

  it.live("a body of another content type than JSON gets a 415 at once, on every POST route, and changes nothing", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const { callbackId, sessionId, turnId } = yield* blockedSession(base)
      const before = yield* storedLog(base, keys.alice, sessionId)
      const routes = [
        "/sessions",
        `/sessions/${sessionId}/turns`,
        `/sessions/${sessionId}/turns/${turnId}/callbacks/${callbackId}/answer`
      ]
      const types = [
        "application/octet-stream",
        "application/xml",
        "application/problem+json",
        "text/plain",
        "multipart/form-data; boundary=x",
        "multipart/form-data",
        "garbage"
      ]
      for (const route of routes) {
        for (const type of types) {
          const reply = yield* request(`${base}${route}`, {
            method: "POST",
            key: keys.alice,
            raw: "{\"input\": \"Where am I?\"}",
            headers: { "content-type": type }
          })
          assert.strictEqual(reply.status, 415, `${type} → ${route}: ${reply.text}`)
          assert.include(reply.text, "Unsupported content-type", `${type} → ${route}`)
        }
      }
      assert.deepStrictEqual(yield* storedLog(base, keys.alice, sessionId), before)
    }))

  it.live("grants over HTTP: an answer with remember lists one; DELETE revokes it (204), then 404 GrantNotFound", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const { callbackId, sessionId, turnId } = yield* blockedSession(base)
      const answered = yield* request(
        `${base}/sessions/${sessionId}/turns/${turnId}/callbacks/${callbackId}/answer?label=alice`,
        { method: "POST", key: keys.alice, body: { _tag: "AllowApproval", remember: "session" } }
      )
      assert.strictEqual(answered.status, 204, answered.text)
      const listed = yield* request(`${base}/sessions/${sessionId}/grants`, { key: keys.alice })
      assert.strictEqual(listed.status, 200, listed.text)
      const grants = listed.json as Array<{ grantId: string; toolPattern: string; scope: string; grantedBy: unknown }>
      assert.deepStrictEqual(grants.map((grant) => [grant.toolPattern, grant.scope]), [[
        "client.get_location",
        "session"
      ]])
      assert.deepStrictEqual(grants[0].grantedBy, {
        _tag: "ApiKey",
        tenant: "alice",
        keyId: keyIdOf(keys.alice),
        onBehalfOf: { _tag: "Client", label: "alice" }
      })
      // Another tenant sees no such session.
      const foreign = yield* request(`${base}/sessions/${sessionId}/grants`, { key: keys.bob })
      assert.strictEqual(foreign.status, 404)
      const path = `${base}/sessions/${sessionId}/grants/${grants[0].grantId}`
      const revoked = yield* request(path, { method: "DELETE", key: keys.alice })
      assert.strictEqual(revoked.status, 204, revoked.text)
      const again = yield* request(path, { method: "DELETE", key: keys.alice })
      assert.strictEqual(again.status, 404, again.text)
      assert.strictEqual((again.json as { _tag?: string })._tag, "GrantNotFound")
      const after = yield* request(`${base}/sessions/${sessionId}/grants`, { key: keys.alice })
      assert.deepStrictEqual(after.json, [])
    }))

  it.live("a key holds at most maxStreamsPerKey event streams (429 beyond, Retry-After: 1); a closed one frees its place", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxStreamsPerKey: 2 })
      const { sessionId } = yield* blockedSession(base)
      const controllers: Array<AbortController> = []
      const openStream = (key: string) =>
        Effect.promise(async () => {
          const controller = new AbortController()
          const response = await fetch(`${base}/sessions/${sessionId}/events`, {
            headers: { authorization: `Bearer ${key}` },
            signal: controller.signal
          })
          if (response.status === 200) controllers.push(controller)
          else await response.text()
          if (response.status === 429) assert.strictEqual(response.headers.get("retry-after"), "1")
          return response.status
        })
      yield* Effect.addFinalizer(() => Effect.sync(() => controllers.forEach((c) => c.abort())))
      assert.strictEqual(yield* openStream(keys.alice), 200)
      assert.strictEqual(yield* openStream(keys.alice), 200)
      assert.strictEqual(yield* openStream(keys.alice), 429)
      controllers.shift()?.abort()
      let status = 0
      for (let i = 0; i < 50 && status !== 200; i++) {
        yield* Effect.sleep("20 millis")
        status = yield* openStream(keys.alice)
      }
      assert.strictEqual(status, 200)
    }))
})

describe("ParleyServer: request logs", () => {
  it.live("one line per request with method, route, status, tenant; never a key or a body", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ fiber, message }) => {
        const annotations = fiber.getRef(References.CurrentLogAnnotations)
        const fields = Object.entries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")
        lines.push(`${(Array.isArray(message) ? message : [message]).join(" ")} ${fields}`)
      })
      const base = yield* server({ log: true }).pipe(Effect.provide(Logger.layer([capture])))
      const { callbackId, sessionId, turnId } = yield* blockedSession(base)
      yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/callbacks/${callbackId}/answer`, {
        method: "POST",
        key: keys.alice,
        body: { _tag: "DenyApproval", reason: "secret-reason-123" }
      })
      yield* request(`${base}/sessions`, { key: "wrong-secret-key" })
      const requests = lines.filter((line) => line.startsWith("request"))
      assert.isAtLeast(requests.length, 5)
      assert.isTrue(
        requests.some((line) =>
          line.includes("route=/sessions/:sessionId/turns") && line.includes("status=202") &&
          line.includes("tenant=alice")
        )
      )
      assert.isTrue(requests.some((line) => line.includes("status=401") && line.includes("tenant=-")))
      for (const line of lines) {
        for (const secret of [keys.alice, keys.bob, "wrong-secret-key", "secret-reason-123", "Where am I?"]) {
          assert.notInclude(line, secret)
        }
      }
    }))
})

describe("ParleyServer: the stored log", () => {
  it.live("Last-Event-ID: empty or blank starts at event 0, a seq resumes after it, anything else is a 400", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const { sessionId } = yield* blockedSession(base)
      const events = (lastEventId: string) =>
        request(`${base}/sessions/${sessionId}/events?live=false`, {
          key: keys.alice,
          headers: { "last-event-id": lastEventId }
        })
      const ids = (text: string) => Array.from(text.matchAll(/^id: ?(\d+)$/gm), (match) => Number(match[1]))
      const log = yield* storedLog(base, keys.alice, sessionId)
      for (const blank of ["", " ", "  "]) {
        const reply = yield* events(blank)
        assert.strictEqual(reply.status, 200, JSON.stringify(blank))
        assert.deepStrictEqual(ids(reply.text), log.map((_, i) => i), `${JSON.stringify(blank)}: from event 0`)
      }
      const resumed = yield* events("2")
      assert.deepStrictEqual(ids(resumed.text), log.map((_, i) => i).slice(3))
      for (const bad of ["-1", "abc", "1.5", "1e3", "0x10", "+3", "3 4", "1234567890123456"]) {
        const reply = yield* events(bad)
        assert.strictEqual(reply.status, 400, `${bad}: ${reply.text}`)
        assert.strictEqual((reply.json as { _tag?: string })._tag, "HttpApiDecodeError", bad)
      }
    }))

  it.live("GET /sessions/:id gives the log's cursor; ?live=false lists the log up to it and ends", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const created = yield* request(`${base}/sessions`, {
        method: "POST",
        key: keys.alice,
        body: Schema.encodeSync(AgentSpec.AgentSpec)(locator.spec)
      })
      const empty = (created.json as { sessionId: string }).sessionId
      assert.strictEqual((created.json as { cursor?: number }).cursor, 0, created.text)
      // A session with no events: the response is the opening heartbeat alone, and it ends.
      const none = yield* request(`${base}/sessions/${empty}/events?live=false`, { key: keys.alice })
      assert.strictEqual(none.status, 200)
      assert.strictEqual(none.text, ": heartbeat\n\n")
      const { sessionId } = yield* blockedSession(base)
      const info = yield* request(`${base}/sessions/${sessionId}`, { key: keys.alice })
      const cursor = (info.json as { cursor?: number }).cursor
      const log = yield* storedLog(base, keys.alice, sessionId)
      assert.strictEqual(cursor, log.length, info.text)
      assert.deepStrictEqual(log.map((entry) => Number(entry.split(":")[0])), log.map((_, i) => i))
      assert.isTrue(log[log.length - 1]?.endsWith("TurnBlocked"), log.join(" "))
    }))
})
