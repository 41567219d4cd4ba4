/**
 * Subagents and sign-ins through the front-end protocols (issue 39), with the real clients against a real server on
 * 127.0.0.1: a `lead` that starts a `helper` subagent and waits for it (the helper's `deploy` asks approval), and the
 * session app's `reader`, which needs a sign-in to the demo `gmail` connector:
 *
 * - the AI SDK's UI message stream, read by `ai`'s `DefaultChatTransport` and `readUIMessageStream`: the subagent is
 *   a `data-parley-subagent` part updated as it works, its approval a tool part of the same message answered by
 *   `addToolApprovalResponse`; a sign-in is a `data-parley-sign-in` part naming its sources, answered through the
 *   protocol (the AI SDK has no answer of its own for it), and a resumed stream shows it connected;
 * - AG-UI, read by `@ag-ui/client`'s `HttpAgent`: `SUBAGENT_STARTED` / `SUBAGENT_FINISHED`, the child's tool calls
 *   carrying its `subagentRunId`, its approval an interrupt resumed like the root's; a sign-in an interrupt resumed
 *   with `{ connected, denied }`.
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai"
import { Effect, Fiber } from "effect"
import * as path from "node:path"
import * as App from "./fixtures/appServer.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** The session app's server: `reader` needs a sign-in. */
const appServer = Effect.gen(function*() {
  const dir = yield* App.tempDir
  return (yield* App.serve(path.join(dir, "sessions.db"))).url
})

/** `lead` here waits for its subagent (`agents.wait`): the helper's approval is part of the lead's turn. */
const lead = Agent.make({
  name: "lead",
  description: "Hands deployments to a helper subagent and waits for it.",
  instructions: "Start a helper to deploy, and wait for it.",
  permissionMode: "ask",
  subagents: [App.helper]
})

/** One brain for both agents, told apart by the tools they are offered. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const done = ScriptedModel.toolResults(call).length
  if (call.tools.some((tool) => tool.name === "agents_spawn")) {
    if (done === 0) return ScriptedModel.toolCall("agents_spawn", { agent: "helper", task: "Deploy the web service." })
    if (done === 1) return ScriptedModel.toolCall("agents_wait", {})
    return ScriptedModel.text("The helper deployed the web service.")
  }
  return done === 0
    ? ScriptedModel.toolCall("deploy", { service: "web" })
    : ScriptedModel.text("The web service is deployed.")
}

/** A server (SQLite file, 127.0.0.1) offering the waiting `lead`, `deploy` run by the server. */
const leadServer = Effect.gen(function*() {
  const model = yield* ScriptedModel.fromFunction(brain)
  return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
    runtimeTools: [App.deploy],
    server: { agents: [lead.spec] }
  })
})

/** The key of the server that runs `agent` (`lead-app`: the session app's `lead`, which does not wait). */
const keyOf = (agent: string) => (agent === "lead" ? keys.alice : App.key)

const newSession = (base: string, agent: string) =>
  Effect.map(
    request(`${base}/sessions`, {
      method: "POST",
      key: keyOf(agent),
      body: { name: agent === "lead-app" ? "lead" : agent }
    }),
    (reply) => (reply.json as { sessionId: string }).sessionId
  )

const eventsText = (base: string, sessionId: string, agent: string) =>
  Effect.map(
    request(`${base}/sessions/${sessionId}/events?live=false`, { key: keyOf(agent) }),
    (reply) => reply.text
  )

// =============================================================================
// The AI SDK
// =============================================================================

const transportOf = (base: string, agent: string) =>
  new DefaultChatTransport<UIMessage>({
    api: `${base}/ai-sdk/${agent}`,
    headers: { authorization: `Bearer ${keyOf(agent)}` }
  })

const read = (stream: ReadableStream<UIMessageChunk>, message?: UIMessage) =>
  Effect.promise(async () => {
    let last: UIMessage | undefined
    for await (const snapshot of readUIMessageStream({ stream, ...(message === undefined ? {} : { message }) })) {
      last = snapshot
    }
    return last!
  })

const send = (base: string, agent: string, chatId: string, messages: Array<UIMessage>) =>
  Effect.tryPromise(() =>
    transportOf(base, agent).sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined
    })
  )

const user = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] })

type ToolPart = Extract<UIMessage["parts"][number], { toolCallId: string }> & {
  readonly approval?: { readonly id: string; readonly approved?: boolean }
}
type DataPart = { readonly type: string; readonly id?: string; readonly data: Record<string, unknown> }

const toolParts = (message: UIMessage): ReadonlyArray<ToolPart> =>
  message.parts.filter((part): part is ToolPart => "toolCallId" in part)

const dataParts = (message: UIMessage, type: string): ReadonlyArray<DataPart> =>
  message.parts.filter((part) => part.type === type) as unknown as ReadonlyArray<DataPart>

/** The message with the approval `approvalId` answered (what `addToolApprovalResponse` does in the client). */
const approve = (message: UIMessage, approvalId: string): UIMessage => ({
  ...message,
  parts: message.parts.map((part) =>
    "toolCallId" in part && (part as ToolPart).approval?.id === approvalId
      ? ({ ...part, state: "approval-responded", approval: { id: approvalId, approved: true } } as typeof part)
      : part
  )
})

const textOf = (message: UIMessage) => message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")

describe("subagents and sign-ins over the AI SDK's UI message stream", () => {
  it.live(
    "a subagent: a data part updated as it works, its approval a tool part of the same message",
    () =>
      Effect.gen(function*() {
        const base = yield* leadServer
        const chatId = yield* newSession(base, "lead")
        const question = user("m1", "Deploy the web service")
        const first = yield* read(yield* send(base, "lead", chatId, [question]))
        const spawn = toolParts(first).find((part) => part.type === "tool-agents_spawn")
        assert.isDefined(spawn, JSON.stringify(first.parts))
        assert.strictEqual(spawn!.state, "approval-requested")

        const spawning = approve(first, spawn!.approval!.id)
        const second = yield* read(yield* send(base, "lead", chatId, [question, spawning]), spawning)
        const subagent = dataParts(second, "data-parley-subagent")
        assert.strictEqual(subagent.length, 1, "one part per subagent, changed in place")
        assert.strictEqual(subagent[0].data.agent, "helper")
        assert.strictEqual(subagent[0].data.task, "Deploy the web service.")
        assert.strictEqual(subagent[0].data.status, "running")
        assert.match(String(subagent[0].id), /^ses_/, "its id is the child session's")
        const deploy = toolParts(second).find((part) => part.type === "tool-deploy")
        assert.isDefined(deploy, "the subagent's approval is in the message")
        assert.strictEqual(deploy!.state, "approval-requested")
        assert.deepStrictEqual((deploy as { input?: unknown }).input, { service: "web" })

        const deploying = approve(second, deploy!.approval!.id)
        const third = yield* read(yield* send(base, "lead", chatId, [question, deploying]), deploying)
        const ended = dataParts(third, "data-parley-subagent")
        assert.strictEqual(ended.length, 1)
        assert.strictEqual(ended[0].data.status, "Completed")
        assert.strictEqual(ended[0].data.text, "The web service is deployed.")
        assert.deepStrictEqual(
          (toolParts(third).find((part) => part.type === "tool-deploy") as { output?: unknown }).output,
          { deployed: "web" }
        )
        assert.strictEqual(textOf(third), "The helper deployed the web service.")
        assert.match(yield* eventsText(base, chatId, "lead"), /"_tag":"SubagentEnded"/)
      }),
    { timeout: 90_000 }
  )

  it.live(
    "a sign-in: a data part naming its sources, answered through the protocol, shown connected on resume",
    () =>
      Effect.gen(function*() {
        const base = yield* appServer
        const chatId = yield* newSession(base, "reader")
        const first = yield* read(yield* send(base, "reader", chatId, [user("m1", "What is my latest email about?")]))
        const signIn = dataParts(first, "data-parley-sign-in")
        assert.strictEqual(signIn.length, 1, JSON.stringify(first.parts))
        const data = signIn[0].data as {
          callbackId: string
          sessionId: string
          turnId: string
          status: string
          sources: Array<{ id: string; source: string }>
        }
        assert.strictEqual(data.status, "open")
        assert.deepStrictEqual(data.sources.map((source) => source.source), ["gmail"])
        assert.strictEqual(data.turnId, first.id, "the part names the turn to answer")

        // The page reloads and resumes; the sign-in is answered through the protocol with what the part names.
        const resumed = yield* Effect.promise(() =>
          transportOf(base, "reader").reconnectToStream({ chatId, abortSignal: undefined } as never)
        )
        assert.isNotNull(resumed)
        const reading = yield* Effect.forkChild(read(resumed!))
        const answer = yield* request(
          `${base}/sessions/${data.sessionId}/turns/${data.turnId}/callbacks/${data.callbackId}/answer`,
          {
            method: "POST",
            key: App.key,
            body: { _tag: "SignInAnswer", connected: [data.sources[0].id], denied: [] }
          }
        )
        assert.strictEqual(answer.status, 204, answer.text)
        const seen = yield* Fiber.join(reading)
        const after = dataParts(seen, "data-parley-sign-in")
        assert.strictEqual(after.length, 1, "the part changes in place")
        assert.strictEqual(after[0].data.status, "answered")
        assert.strictEqual(textOf(seen), "Your latest email is about lunch.")
      }),
    { timeout: 90_000 }
  )
})

// =============================================================================
// AG-UI
// =============================================================================

type Interrupt = { readonly id: string; readonly reason: string; readonly toolCallId?: string }

const agentOf = (base: string, agent: string, threadId: string) =>
  new HttpAgent({
    url: `${base}/ag-ui/${agent === "lead-app" ? "lead" : agent}`,
    headers: { authorization: `Bearer ${keyOf(agent)}` },
    threadId
  })

const run = (agent: HttpAgent, parameters: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
  Effect.tryPromise(async () => {
    const events: Array<BaseEvent & Record<string, unknown>> = []
    await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event as never) })
    const finished = events.find((event) => event.type === "RUN_FINISHED") as
      | { outcome?: { type: string; interrupts?: Array<Interrupt> } }
      | undefined
    return { events, types: events.map((event) => event.type as string), outcome: finished?.outcome }
  })

describe("subagents and sign-ins over AG-UI", () => {
  it.live(
    "a subagent: SUBAGENT_STARTED / FINISHED, its tool calls under its run id, its approval an interrupt",
    () =>
      Effect.gen(function*() {
        const base = yield* leadServer
        const threadId = yield* newSession(base, "lead")
        const agent = agentOf(base, "lead", threadId)
        agent.addMessage({ id: "u1", role: "user", content: "Deploy the web service" })
        const first = yield* run(agent)
        assert.strictEqual(first.outcome?.type, "interrupt")
        const spawn = first.outcome!.interrupts![0]
        assert.strictEqual(spawn.reason, "approval")

        const second = yield* run(agent, {
          resume: [{ interruptId: spawn.id, status: "resolved", payload: { approved: true } }]
        })
        const started = second.events.find((event) => event.type === "SUBAGENT_STARTED")
        assert.isDefined(started, second.types.join(" "))
        const childRun = String(started!.subagentRunId)
        assert.match(childRun, /^ses_/)
        const childCall = second.events.find((event) =>
          event.type === "TOOL_CALL_START" && event.toolCallName === "deploy"
        )
        assert.strictEqual(childCall?.subagentRunId, childRun, "the child's tool call carries its run id")
        assert.strictEqual(second.outcome?.type, "interrupt")
        const deploy = second.outcome!.interrupts!.find((interrupt) => interrupt.toolCallId === childCall!.toolCallId)
        assert.isDefined(deploy, JSON.stringify(second.outcome))
        assert.strictEqual((deploy as { subagentRunId?: string }).subagentRunId, childRun, "raised by the subagent")
        const suspended = second.events.find((event) => event.type === "SUBAGENT_FINISHED")
        assert.deepStrictEqual(
          [suspended?.subagentRunId, suspended?.outcome],
          [childRun, { type: "suspended", interruptIds: [deploy!.id] }],
          "the run ends the subagent's segment, suspended on its own interrupt"
        )
        const state = agent.state as { openCallbacks: Array<{ sessionId: string; tool?: string }> }
        assert.deepStrictEqual(
          state.openCallbacks.map((open) => [open.sessionId, open.tool]),
          [[childRun, "deploy"]],
          "the state snapshot lists the child's callback"
        )

        const third = yield* run(agent, {
          resume: [{ interruptId: deploy!.id, status: "resolved", payload: { approved: true } }]
        })
        assert.strictEqual(third.outcome?.type, "success", third.types.join(" "))
        const again = third.events.find((event) => event.type === "SUBAGENT_STARTED")
        assert.deepStrictEqual(
          [again?.subagentRunId, again?.name],
          [childRun, "helper"],
          "the next run starts it again"
        )
        const finished = third.events.find((event) => event.type === "SUBAGENT_FINISHED")
        assert.strictEqual(finished?.subagentRunId, childRun)
        assert.isUndefined(finished?.outcome, "this time it completed")
        assert.include(
          third.events.flatMap((event) => event.type === "TEXT_MESSAGE_CONTENT" ? [event.delta] : []).join(""),
          "The helper deployed the web service."
        )
      }),
    { timeout: 90_000 }
  )

  it.live(
    "a subagent still working when the turn ends (no agents.wait): its segment ends suspended, the run finishes",
    () =>
      Effect.gen(function*() {
        const base = yield* appServer
        const threadId = yield* newSession(base, "lead-app")
        const agent = agentOf(base, "lead-app", threadId)
        agent.addMessage({ id: "u1", role: "user", content: "Deploy the web service" })
        const spawn = (yield* run(agent)).outcome!.interrupts![0]
        const done = yield* run(agent, {
          resume: [{ interruptId: spawn.id, status: "resolved", payload: { approved: true } }]
        })
        assert.strictEqual(done.outcome?.type, "success", done.types.join(" "))
        const types = done.types
        assert.isBelow(types.indexOf("SUBAGENT_FINISHED"), types.indexOf("RUN_FINISHED"))
        const finished = done.events.find((event) => event.type === "SUBAGENT_FINISHED")
        assert.deepStrictEqual(finished?.outcome, { type: "suspended", interruptIds: [] })
      }),
    { timeout: 90_000 }
  )

  it.live("a sign-in: an interrupt resumed with { connected, denied }", () =>
    Effect.gen(function*() {
      const base = yield* appServer
      const threadId = yield* newSession(base, "reader")
      const agent = agentOf(base, "reader", threadId)
      agent.addMessage({ id: "u1", role: "user", content: "What is my latest email about?" })
      const first = yield* run(agent)
      assert.strictEqual(first.outcome?.type, "interrupt")
      const signIn = first.outcome!.interrupts![0]
      assert.strictEqual(signIn.reason, "sign_in")
      assert.isUndefined(signIn.toolCallId)
      assert.isUndefined((signIn as { subagentRunId?: string }).subagentRunId, "raised by the root")
      const requests = yield* request(`${base}/callbacks`, { key: App.key })
      const open = (requests.json as Array<{ callback: { id: string; requests?: Array<{ id: string }> } }>)
        .map((entry) => entry.callback).find((callback) => callback.id === signIn.id)
      assert.isDefined(open, requests.text)

      // A payload that is no sign-in answer is refused and answers nothing.
      const refused = yield* Effect.flip(run(agent, {
        resume: [{ interruptId: signIn.id, status: "resolved", payload: { approved: true } }]
      }))
      assert.strictEqual((refused as { cause?: { status?: number } }).cause?.status, 422, String(refused))

      const done = yield* run(agent, {
        resume: [{
          interruptId: signIn.id,
          status: "resolved",
          payload: { connected: open!.requests!.map((entry) => entry.id), denied: [] }
        }]
      })
      assert.strictEqual(done.outcome?.type, "success", done.types.join(" "))
      assert.strictEqual(
        done.events.flatMap((event) => event.type === "TEXT_MESSAGE_CONTENT" ? [event.delta] : []).join(""),
        "Your latest email is about lunch."
      )
    }), { timeout: 90_000 })
})
