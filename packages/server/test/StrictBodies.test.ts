/**
 * Request bodies are strict (issue 35, point 4), over HTTP against a real server on 127.0.0.1: a field the protocol
 * does not know is a 400 `HttpApiDecodeError` naming it, and changes nothing — a misspelt `remember` grants nothing
 * and leaves the callback open, a misspelt `requestId` queues no turn, an unknown field of a definition starts no
 * session.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, CallbackHandler, Session, Turn } from "@parley/core"
import type { TurnState } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const request = (url: string, method: string, path: string, body?: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${keys.alice}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) as Record<string, unknown> }
  })

/** The issues of a 400 `HttpApiDecodeError`, as `path: message`. */
const issuesOf = (body: Record<string, unknown> | undefined) => {
  assert.strictEqual(body?._tag, "HttpApiDecodeError")
  return (body?.issues as Array<{ path: Array<string | number>; message: string }>).map((issue) =>
    `${issue.path.join(".")}: ${issue.message}`
  )
}

describe("strict request bodies", () => {
  it.effect("an unknown field is a 400 naming it, and changes nothing", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain)
      const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
        runtimeTools: [],
        server: { agents: [locator.spec] }
      })
      const transport = HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) })
      // A turn blocked on its approval, answered by nobody.
      const { blocked, turn } = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(locator)
        const turn = yield* Session.sendMessage(session, "Where am I?")
        const blocked = (yield* Turn.result(turn).pipe(Effect.provide(CallbackHandler.layer({})))) as TurnState.Blocked
        return { blocked, turn }
      }).pipe(Effect.provide(transport))
      assert.strictEqual(blocked._tag, "Blocked")
      const callback = blocked.callbacks[0]
      const answerPath = `/sessions/${turn.sessionId}/turns/${turn.turnId}/callbacks/${callback.id}/answer`

      const misspelt = yield* request(url, "POST", answerPath, { _tag: "AllowApproval", remeber: "session" })
      assert.strictEqual(misspelt.status, 400)
      assert.deepStrictEqual(issuesOf(misspelt.body), ["remeber: Expected no excess property (did you mean remember?)"])
      const open = yield* request(url, "GET", `/callbacks?sessionId=${turn.sessionId}`)
      assert.deepStrictEqual(
        (open.body as unknown as Array<{ callback: { id: string } }>).map((entry) => entry.callback.id),
        [
          callback.id
        ]
      )
      const grants = yield* request(url, "GET", `/sessions/${turn.sessionId}/grants`)
      assert.deepStrictEqual(grants.body, [] as unknown)

      const sendPath = `/sessions/${turn.sessionId}/turns`
      const requestID = yield* request(url, "POST", sendPath, { input: "again", requestID: "req_1" })
      assert.strictEqual(requestID.status, 400)
      assert.deepStrictEqual(issuesOf(requestID.body), [
        "requestID: Expected no excess property (did you mean requestId?)"
      ])
      const stored = yield* Effect.promise(() =>
        fetch(`${url}/sessions/${turn.sessionId}/events?live=false`, {
          headers: { authorization: `Bearer ${keys.alice}` }
        }).then((response) => response.text())
      )
      assert.strictEqual(stored.split("\n").filter((line) => line === "event: TurnQueued").length, 1)

      const definition = yield* request(url, "POST", "/sessions", { name: "locator", permisions: { default: "ask" } })
      assert.strictEqual(definition.status, 400)
      assert.deepStrictEqual(issuesOf(definition.body), [
        "permisions: Expected no excess property (did you mean permissions?)"
      ])
      const listed = yield* request(url, "GET", "/sessions")
      assert.strictEqual((listed.body?.sessions as Array<unknown>).length, 1)

      // The well-formed answer is still taken.
      const allowed = yield* request(url, "POST", answerPath, { _tag: "AllowApproval" })
      assert.strictEqual(allowed.status, 204)
    }), 60_000)
})

describe("refusals are short", () => {
  it.effect(
    "a 400 states where and what, without echoing a large value or listing every issue",
    () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.fromFunction(brain)
        const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
          runtimeTools: [],
          server: { agents: [locator.spec] }
        })
        const huge = "x".repeat(900_000)
        // A string where the tools' array belongs: the refusal names the field and the rule, and repeats at most a prefix.
        const wrong = yield* request(url, "POST", "/sessions", { name: "locator", tools: huge })
        assert.strictEqual(wrong.status, 400)
        assert.isBelow(JSON.stringify(wrong.body).length, 4_096)
        assert.deepStrictEqual(issuesOf(wrong.body).length, 1)
        assert.match(issuesOf(wrong.body)[0], /^tools: Expected array/)
        // An unknown field whose name is the large value: named by a prefix, in the issue and in the message.
        const key = yield* request(url, "POST", "/sessions", { name: "locator", [huge]: 1 })
        assert.strictEqual(key.status, 400)
        assert.isBelow(JSON.stringify(key.body).length, 4_096)
        assert.match(issuesOf(key.body)[0], /^x{99}…: Expected no excess property$/)
        const many = yield* request(url, "POST", "/sessions", {
          name: "locator",
          tools: Array.from({ length: 5_000 }, (_, i) => ({ name: i }))
        })
        assert.strictEqual(many.status, 400)
        assert.isAtMost(issuesOf(many.body).length, 21)
        assert.isBelow(JSON.stringify(many.body).length, 16_384)
      }),
    60_000
  )
})
