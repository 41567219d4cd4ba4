/**
 * `POST /callbacks/answer` (issue 36, point 5): one answer for every open callback of the tenant a filter matches,
 * each judged and recorded as if answered by its own request, one report line each — against a real server on
 * 127.0.0.1 (SQLite file). The locator agent asks an approval for its `get_location` client tool, then the tool's
 * result.
 */
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const server = Effect.gen(function*() {
  const model = yield* ScriptedModel.fromFunction(brain)
  return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
    runtimeTools: [],
    server: { agents: [locator.spec] }
  })
})

/** A locator turn waiting on its approval: its session and turn. */
const blocked = (base: string, key: string) =>
  Effect.gen(function*() {
    const created = yield* request(`${base}/sessions`, { method: "POST", key, body: { name: "locator" } })
    const sessionId = (created.json as { sessionId: string }).sessionId
    const sent = yield* request(`${base}/sessions/${sessionId}/turns`, { method: "POST", key, body: { input: "Go" } })
    const turnId = (sent.json as { turnId: string }).turnId
    yield* waitFor(base, key, sessionId, turnId, "Blocked")
    return { sessionId, turnId }
  })

const waitFor = (base: string, key: string, sessionId: string, turnId: string, state: string) =>
  Effect.gen(function*() {
    const waited = yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=20`, { key })
    assert.strictEqual((waited.json as { state?: { _tag: string } }).state?._tag, state, waited.text)
  })

interface Line {
  readonly callbackId: string
  readonly sessionId: string
  readonly kind: string
  readonly subject: string
  readonly outcome: string
  readonly error?: string
  readonly reason?: string
}

const answerMany = (base: string, body: unknown, key: string = keys.alice) =>
  Effect.map(
    request(`${base}/callbacks/answer`, { method: "POST", key, body }),
    (reply) => ({ ...reply, lines: (reply.json as { results?: Array<Line> }).results ?? [] })
  )

const openCount = (base: string, key: string) =>
  Effect.map(request(`${base}/callbacks`, { key }), (reply) => (reply.json as Array<unknown>).length)

const outcomes = (lines: ReadonlyArray<Line>) => lines.map((line) => line.outcome).sort()

describe("POST /callbacks/answer", () => {
  it.live(
    "by tool: each matching callback answered as if one by one, a line each; a misfit refused and left open",
    () =>
      Effect.gen(function*() {
        const base = yield* server
        const turns = yield* Effect.all([
          blocked(base, keys.alice),
          blocked(base, keys.alice),
          blocked(base, keys.alice)
        ])
        const bobs = yield* blocked(base, keys.bob)

        const dry = yield* answerMany(base, {
          filter: { tool: "client.get_location" },
          answer: { _tag: "AllowApproval" },
          dryRun: true
        })
        assert.strictEqual(dry.status, 200, dry.text)
        assert.deepStrictEqual(outcomes(dry.lines), ["matched", "matched", "matched"])
        assert.strictEqual(yield* openCount(base, keys.alice), 3, "a dry run answers nothing")

        const allowed = yield* answerMany(base, {
          filter: { tool: "get_location", kind: "approval" },
          answer: { _tag: "AllowApproval" },
          label: "ops"
        })
        assert.deepStrictEqual(outcomes(allowed.lines), ["answered", "answered", "answered"])
        assert.deepStrictEqual(
          allowed.lines.map((line) => line.sessionId).sort(),
          turns.map((turn) => turn.sessionId).sort(),
          "only Alice's: Bob's approval is not hers"
        )
        assert.deepStrictEqual(allowed.lines.map((line) => line.subject), Array(3).fill("client.get_location"))
        assert.strictEqual(yield* openCount(base, keys.bob), 1, "Bob's approval is still open")
        const log = yield* request(`${base}/sessions/${turns[0].sessionId}/events?live=false`, { key: keys.alice })
        assert.match(
          log.text,
          /"answeredBy":\{"_tag":"ApiKey","tenant":"alice","keyId":"[^"]+","onBehalfOf":\{"_tag":"Client","label":"ops"\}\}/
        )

        // Each turn now waits on its client tool: the same tool, another kind. An approval's answer does not fit it.
        for (const turn of turns) yield* waitFor(base, keys.alice, turn.sessionId, turn.turnId, "Blocked")
        const misfit = yield* answerMany(base, {
          filter: { tool: "client.get_location" },
          answer: { _tag: "AllowApproval" }
        })
        assert.deepStrictEqual(outcomes(misfit.lines), ["refused", "refused", "refused"])
        assert.deepStrictEqual(misfit.lines.map((line) => line.error), Array(3).fill("AnswerMismatch"))
        assert.strictEqual(yield* openCount(base, keys.alice), 3, "a refused answer leaves its callback open")

        const results = yield* answerMany(base, {
          filter: { tool: "client.get_location", kind: "client_tool" },
          answer: { _tag: "ClientToolResult", isFailure: false, result: { city: "Lyon" } }
        })
        assert.deepStrictEqual(outcomes(results.lines), ["answered", "answered", "answered"])
        for (const turn of turns) yield* waitFor(base, keys.alice, turn.sessionId, turn.turnId, "Completed")
        assert.strictEqual(yield* openCount(base, keys.bob), 1)
        assert.strictEqual(bobs.sessionId.startsWith("ses_"), true)
      }),
    { timeout: 90_000 }
  )

  it.live(
    "by session, by tree, by age; no condition or a bad one is a 400 that answers nothing",
    () =>
      Effect.gen(function*() {
        const base = yield* server
        const [first, second] = yield* Effect.all([blocked(base, keys.alice), blocked(base, keys.alice)])
        const old = yield* answerMany(base, { filter: { olderThan: 3600 }, answer: { _tag: "AllowApproval" } })
        assert.deepStrictEqual(old.lines, [], "nothing has waited an hour")
        const foreign = yield* answerMany(base, {
          filter: { sessionId: first.sessionId },
          answer: { _tag: "AllowApproval" }
        }, keys.bob)
        assert.deepStrictEqual(foreign.lines, [], "another tenant's session matches nothing")
        for (
          const body of [
            { filter: {}, answer: { _tag: "AllowApproval" } },
            { filter: { tool: "x" }, answer: { _tag: "Allow" } },
            { filter: { tool: "x", colour: "red" }, answer: { _tag: "AllowApproval" } },
            { filter: { olderThan: -1 }, answer: { _tag: "AllowApproval" } }
          ]
        ) {
          const refused = yield* answerMany(base, body)
          assert.strictEqual(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`)
          assert.strictEqual((refused.json as { _tag: string })._tag, "HttpApiDecodeError")
        }
        assert.strictEqual(yield* openCount(base, keys.alice), 2)

        const bySession = yield* answerMany(base, {
          filter: { sessionId: first.sessionId },
          answer: { _tag: "DenyApproval", reason: "not this one" }
        })
        assert.deepStrictEqual(bySession.lines.map((line) => [line.sessionId, line.outcome]), [
          [first.sessionId, "answered"]
        ])
        const byTree = yield* answerMany(base, {
          filter: { treeId: second.sessionId },
          answer: { _tag: "AllowApproval" }
        })
        assert.deepStrictEqual(byTree.lines.map((line) => [line.sessionId, line.outcome]), [
          [second.sessionId, "answered"]
        ])
      }),
    { timeout: 90_000 }
  )

  it.live(
    "two batches racing for the same callbacks: each callback answered once, the other line refused",
    () =>
      Effect.gen(function*() {
        const base = yield* server
        yield* Effect.all(Array.from({ length: 4 }, () => blocked(base, keys.alice)), { concurrency: 4 })
        const body = { filter: { kind: "approval" }, answer: { _tag: "AllowApproval" } }
        const [a, b] = yield* Effect.all([answerMany(base, body), answerMany(base, body)], { concurrency: 2 })
        const byCallback = new Map<string, Array<string>>()
        for (const line of [...a.lines, ...b.lines]) {
          byCallback.set(line.callbackId, [...(byCallback.get(line.callbackId) ?? []), line.outcome])
        }
        assert.strictEqual(byCallback.size, 4)
        for (const [id, seen] of byCallback) {
          assert.strictEqual(seen.filter((outcome) => outcome === "answered").length, 1, `${id}: ${seen.join()}`)
        }
        const refused = [...a.lines, ...b.lines].filter((line) => line.outcome === "refused")
        for (const line of refused) assert.include(["CallbackAlreadyAnswered", "CallbackNotOpen"], line.error)
      }),
    { timeout: 90_000 }
  )
})
