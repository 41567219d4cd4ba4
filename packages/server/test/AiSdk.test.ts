/**
 * The AI SDK's UI message stream (issue 39), read by the `ai` package's own client against a real server on
 * 127.0.0.1: `DefaultChatTransport` posts and resumes as `useChat` does, `readUIMessageStream` builds the messages.
 * The locator agent asks an approval for its `get_location` client tool, then the tool's result, then answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai"
import { Effect, Fiber } from "effect"
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

const newSession = (base: string, key: string = keys.alice) =>
  Effect.map(
    request(`${base}/sessions`, { method: "POST", key, body: { name: "locator" } }),
    (reply) => (reply.json as { sessionId: string }).sessionId
  )

const transportOf = (base: string, key: string = keys.alice) =>
  new DefaultChatTransport<UIMessage>({ api: `${base}/ai-sdk/locator`, headers: { authorization: `Bearer ${key}` } })

/** The last state of the assistant message a stream builds (continuing `message` if given). */
const read = (stream: ReadableStream<UIMessageChunk>, message?: UIMessage) =>
  Effect.promise(async () => {
    let last: UIMessage | undefined
    for await (const snapshot of readUIMessageStream({ stream, ...(message === undefined ? {} : { message }) })) {
      last = snapshot
    }
    return last!
  })

const send = (base: string, chatId: string, messages: Array<UIMessage>, key?: string) =>
  Effect.tryPromise(() =>
    transportOf(base, key).sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined
    })
  )

const user = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] })

type ToolPart = Extract<UIMessage["parts"][number], { toolCallId: string }>

const toolPart = (message: UIMessage): ToolPart => {
  const part = message.parts.find((p): p is ToolPart => "toolCallId" in p)
  assert.isDefined(part, JSON.stringify(message.parts))
  return part!
}

/** The message with its tool part replaced (what `addToolApprovalResponse` / `addToolOutput` do in the client). */
const withTool = (message: UIMessage, change: Record<string, unknown>): UIMessage => ({
  ...message,
  parts: message.parts.map((p) => ("toolCallId" in p ? ({ ...p, ...change } as typeof p) : p))
})

const textOf = (message: UIMessage) => message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")

describe("the AI SDK's UI message stream", () => {
  it.live(
    "send, approve, answer the client tool: the turn completes, each step a continuation",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const chatId = yield* newSession(base)
        const question = user("m1", "Where am I?")
        const first = yield* read(yield* send(base, chatId, [question]))
        const asked = toolPart(first)
        assert.strictEqual(asked.type, "tool-get_location")
        assert.strictEqual(asked.state, "approval-requested")
        assert.match(first.id, /^turn_/, "the assistant message is the turn")
        const approvalId = (asked as { approval: { id: string } }).approval.id
        assert.match(approvalId, /^cb_/, "the approval id is the callback's id")

        const approved = withTool(first, { state: "approval-responded", approval: { id: approvalId, approved: true } })
        const second = yield* read(yield* send(base, chatId, [question, approved]), approved)
        assert.strictEqual(second.id, first.id, "the stream continues the same message")
        const tool = toolPart(second)
        assert.strictEqual(tool.state, "input-available", "the client tool is now the client's to answer")
        assert.deepStrictEqual((tool as { approval?: { approved?: boolean } }).approval?.approved, true)

        // An output that does not fit the tool's schema is refused (422) and answers nothing.
        const wrong = withTool(second, { state: "output-available", output: { town: 3 } })
        const refused = yield* Effect.flip(send(base, chatId, [question, wrong]))
        const cause = (refused as { cause?: { statusCode?: number; responseBody?: string } }).cause
        assert.strictEqual(cause?.statusCode, 422, String(cause))
        assert.match(cause?.responseBody ?? "", /"_tag":"AnswerMismatch"/)

        const answered = withTool(second, { state: "output-available", output: { city: "Lyon" } })
        const third = yield* read(yield* send(base, chatId, [question, answered]), answered)
        assert.strictEqual(textOf(third), "You are in Lyon.")
        assert.strictEqual(toolPart(third).state, "output-available")
        assert.deepStrictEqual((toolPart(third) as { output: unknown }).output, { city: "Lyon" })
        assert.deepStrictEqual(third.parts.filter((p) => p.type === "step-start").length >= 2, true)

        // The turn ended: nothing to resume.
        const resumed = yield* Effect.promise(() =>
          transportOf(base).reconnectToStream({ chatId, abortSignal: undefined } as never)
        )
        assert.strictEqual(resumed, null)
      }),
    { timeout: 60_000 }
  )

  it.live("deny: the tool part is denied and the turn goes on without it", () =>
    Effect.gen(function*() {
      const base = yield* server()
      const chatId = yield* newSession(base)
      const question = user("m1", "Where am I?")
      const first = yield* read(yield* send(base, chatId, [question]))
      const approvalId = (toolPart(first) as { approval: { id: string } }).approval.id
      const denied = withTool(first, {
        state: "approval-responded",
        approval: { id: approvalId, approved: false, reason: "not now" }
      })
      const second = yield* read(yield* send(base, chatId, [question, denied]), denied)
      assert.strictEqual(toolPart(second).state, "output-denied")
      assert.strictEqual(second.parts.at(-1)?.type === "text" || textOf(second).length > 0, true)
      const events = yield* request(`${base}/sessions/${chatId}/events?live=false`, { key: keys.alice })
      assert.match(events.text, /"DenyApproval"/)
      assert.match(events.text, /"reason":"not now"/)
    }), { timeout: 60_000 })

  it.live(
    "an approval answered by another client: a resumed stream shows it resolved and goes on",
    () =>
      Effect.gen(function*() {
        const base = yield* server()
        const chatId = yield* newSession(base)
        const first = yield* read(yield* send(base, chatId, [user("m1", "Where am I?")]))
        const approvalId = (toolPart(first) as { approval: { id: string } }).approval.id
        // The page reloads: `resume` replays the turn and waits on it.
        const resumed = yield* Effect.promise(() =>
          transportOf(base).reconnectToStream({ chatId, abortSignal: undefined } as never)
        )
        assert.isNotNull(resumed)
        const reading = yield* Effect.forkChild(read(resumed!))
        // Someone else (the CLI, another tab) approves over the protocol.
        const answer = yield* request(
          `${base}/sessions/${chatId}/turns/${first.id}/callbacks/${approvalId}/answer`,
          { method: "POST", key: keys.alice, body: { _tag: "AllowApproval" } }
        )
        assert.strictEqual(answer.status, 204, answer.text)
        const seen = yield* Fiber.join(reading)
        const tool = toolPart(seen)
        assert.strictEqual(tool.state, "input-available")
        assert.strictEqual((tool as { approval?: { approved?: boolean } }).approval?.approved, true)
      }),
    { timeout: 60_000 }
  )

  it.live("the same keys, tenants and limits as the protocol", () =>
    Effect.gen(function*() {
      const base = yield* server({ maxBodyBytes: 4096 })
      const chatId = yield* newSession(base)
      const body = { id: chatId, messages: [user("m1", "Where am I?")], trigger: "submit-message" }
      const missing = yield* request(`${base}/ai-sdk/locator`, { method: "POST", body })
      assert.strictEqual(missing.status, 401, missing.text)
      const resumeMissing = yield* request(`${base}/ai-sdk/locator/${chatId}/stream`)
      assert.strictEqual(resumeMissing.status, 401)
      const foreign = yield* request(`${base}/ai-sdk/locator`, { method: "POST", key: keys.bob, body })
      assert.strictEqual(foreign.status, 404, "another tenant's session is not found")
      assert.strictEqual((foreign.json as { _tag: string })._tag, "SessionNotFound")
      const otherAgent = yield* request(`${base}/ai-sdk/someone`, { method: "POST", key: keys.alice, body })
      assert.strictEqual(otherAgent.status, 404, "a session of another agent is not found")
      const big = { ...body, messages: [user("m1", "x".repeat(10_000))] }
      const tooLarge = yield* request(`${base}/ai-sdk/locator`, { method: "POST", key: keys.alice, body: big })
      assert.strictEqual(tooLarge.status, 413, tooLarge.text)
      const malformed = yield* request(`${base}/ai-sdk/locator`, {
        method: "POST",
        key: keys.alice,
        body: { id: chatId, messages: "no" }
      })
      assert.strictEqual(malformed.status, 400, malformed.text)
      assert.strictEqual((malformed.json as { _tag: string })._tag, "HttpApiDecodeError")
      const events = yield* request(`${base}/sessions/${chatId}/events?live=false`, { key: keys.alice })
      assert.notMatch(events.text, /TurnQueued/, "no refused request started a turn")
    }), { timeout: 60_000 })
})
