/**
 * AG-UI (issue 39) with `@ag-ui/client`'s own `HttpAgent` against a real server on 127.0.0.1: the locator agent's
 * approval and client tool call are interrupts the client resumes (or, for the client tool, a frontend tool call a
 * `tool` message answers); steps, tool calls, text and a state snapshot of the open callbacks come as AG-UI events.
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const server = (options: { readonly maxBodyBytes?: number } = {}) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
      runtimeTools: [],
      server: { agents: [locator.spec], ...options }
    })
  })

const newSession = (base: string) =>
  Effect.map(
    request(`${base}/sessions`, { method: "POST", key: keys.alice, body: { name: "locator" } }),
    (reply) => (reply.json as { sessionId: string }).sessionId
  )

const agentOf = (base: string, threadId: string, key: string = keys.alice) =>
  new HttpAgent({ url: `${base}/ag-ui/locator`, headers: { authorization: `Bearer ${key}` }, threadId })

type Interrupt = { readonly id: string; readonly reason: string; readonly toolCallId?: string }

/** One run: its events, and the interrupts its RUN_FINISHED names. */
const run = (agent: HttpAgent, parameters: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
  Effect.tryPromise(async () => {
    const events: Array<BaseEvent> = []
    await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) })
    const finished = events.find((event) => event.type === "RUN_FINISHED") as
      | { outcome?: { type: string; interrupts?: Array<Interrupt> } }
      | undefined
    return { events, types: events.map((event) => event.type as string), outcome: finished?.outcome }
  })

describe("AG-UI", () => {
  it.live(
    "a run, an approval interrupt resumed, a client tool interrupt resumed: the turn completes",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const threadId = yield* newSession(base)
        const agent = agentOf(base, threadId)
        agent.addMessage({ id: "u1", role: "user", content: "Where am I?" })
        const first = yield* run(agent)
        assert.deepStrictEqual(first.types.slice(0, 2), ["RUN_STARTED", "STATE_SNAPSHOT"])
        assert.include(first.types, "STEP_STARTED")
        assert.include(first.types, "TOOL_CALL_START")
        assert.strictEqual(first.outcome?.type, "interrupt")
        const approval = first.outcome!.interrupts![0]
        assert.strictEqual(approval.reason, "approval")
        assert.match(approval.id, /^cb_/)
        const state = agent.state as { openCallbacks: Array<{ id: string; kind: string }> }
        assert.deepStrictEqual(state.openCallbacks.map((open) => open.kind), ["approval"], "the state lists it")

        const second = yield* run(agent, {
          resume: [{ interruptId: approval.id, status: "resolved", payload: { approved: true } }]
        })
        assert.strictEqual(second.outcome?.type, "interrupt")
        const tool = second.outcome!.interrupts![0]
        assert.strictEqual(tool.reason, "client_tool")
        assert.strictEqual(tool.toolCallId, approval.toolCallId)

        // A result that does not fit the tool's schema is refused and answers nothing.
        const refused = yield* Effect.flip(run(agent, {
          resume: [{ interruptId: tool.id, status: "resolved", payload: { town: 1 } }]
        }))
        assert.strictEqual((refused as { cause?: { status?: number } }).cause?.status, 422, String(refused))

        const third = yield* run(agent, {
          resume: [{ interruptId: tool.id, status: "resolved", payload: { city: "Lyon" } }]
        })
        assert.strictEqual(third.outcome?.type, "success")
        assert.include(third.types, "TOOL_CALL_RESULT")
        const text = third.events.flatMap((event) =>
          event.type === "TEXT_MESSAGE_CONTENT" ? [(event as unknown as { delta: string }).delta] : []
        ).join("")
        assert.strictEqual(text, "You are in Lyon.")
        assert.include(
          agent.messages.map((message) => message.role === "assistant" ? message.content : undefined),
          "You are in Lyon."
        )
        assert.deepStrictEqual((agent.state as { openCallbacks: Array<unknown> }).openCallbacks, [])
      }),
    { timeout: 60_000 }
  )

  it.live("a denial, and the client tool answered as a frontend tool (a tool message)", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const threadId = yield* newSession(base)
      // The approval is denied: the turn goes on and ends.
      const denying = agentOf(base, threadId)
      denying.addMessage({ id: "u1", role: "user", content: "Where am I?" })
      const first = yield* run(denying)
      const approval = first.outcome!.interrupts![0]
      const denied = yield* run(denying, {
        resume: [{ interruptId: approval.id, status: "resolved", payload: { approved: false, reason: "no" } }]
      })
      assert.strictEqual(denied.outcome?.type, "success")
      const events = yield* request(`${base}/sessions/${threadId}/events?live=false`, { key: keys.alice })
      assert.match(events.text, /"DenyApproval","reason":"no"/)

      // Another session: approved, then the client tool answered with a `tool` message (no resume entry).
      const otherThread = yield* newSession(base)
      const second = agentOf(base, otherThread)
      second.addMessage({ id: "u2", role: "user", content: "And now?" })
      const asked = yield* run(second)
      const again = asked.outcome!.interrupts![0]
      const allowed = yield* run(second, {
        resume: [{ interruptId: again.id, status: "resolved", payload: { approved: true } }]
      })
      const toolCallId = allowed.outcome!.interrupts![0].toolCallId!
      const frontend = agentOf(base, otherThread)
      frontend.addMessage({ id: "u2", role: "user", content: "And now?" })
      frontend.addMessage({ id: "t2", role: "tool", toolCallId, content: JSON.stringify({ city: "Nantes" }) })
      const done = yield* run(frontend)
      assert.strictEqual(done.outcome?.type, "success")
      const log = yield* request(`${base}/sessions/${otherThread}/events?live=false`, { key: keys.alice })
      assert.match(log.text, /"ClientToolResult","isFailure":false,"result":\{"city":"Nantes"\}/)
    }), { timeout: 60_000 })

  it.live("the same keys, tenants and limits as the protocol", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxBodyBytes: 4096 })
      const threadId = yield* newSession(base)
      const body = { threadId, runId: "r1", messages: [{ id: "u1", role: "user", content: "Where?" }], tools: [] }
      const missing = yield* request(`${base}/ag-ui/locator`, { method: "POST", body })
      assert.strictEqual(missing.status, 401)
      const foreign = yield* request(`${base}/ag-ui/locator`, { method: "POST", key: keys.bob, body })
      assert.strictEqual(foreign.status, 404)
      const big = { ...body, messages: [{ id: "u1", role: "user", content: "x".repeat(10_000) }] }
      const tooLarge = yield* request(`${base}/ag-ui/locator`, { method: "POST", key: keys.alice, body: big })
      assert.strictEqual(tooLarge.status, 413)
      const malformed = yield* request(`${base}/ag-ui/locator`, { method: "POST", key: keys.alice, body: { threadId } })
      assert.strictEqual(malformed.status, 400)
      assert.strictEqual((malformed.json as { _tag: string })._tag, "HttpApiDecodeError")
      // HttpAgent with another tenant's key: the run fails, nothing starts.
      const bobs = agentOf(base, threadId, keys.bob)
      bobs.addMessage({ id: "u1", role: "user", content: "Where?" })
      const error = yield* Effect.flip(run(bobs))
      assert.strictEqual((error as { cause?: { status?: number } }).cause?.status, 404, String(error))
      const events = yield* request(`${base}/sessions/${threadId}/events?live=false`, { key: keys.alice })
      assert.notMatch(events.text, /TurnQueued/)
    }), { timeout: 60_000 })
})
