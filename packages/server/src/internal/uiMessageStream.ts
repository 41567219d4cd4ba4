/**
 * The AI SDK's UI message stream (what `useChat` of `@ai-sdk/react` and `readUIMessageStream` of `ai` read), spoken by
 * Parley: a turn's events as UI message chunks, and the answers a client's message list carries.
 *
 * - One assistant message per turn, its id the turn's id: a resumed stream replays it, a stream after an answer
 *   continues it.
 * - Each model step is a `start-step` … `finish-step`; its text streams as `text-*` chunks (the stored text when
 *   the deltas are gone, as on a replay), its reasoning as `reasoning-*`.
 * - A tool call is a tool part (`tool-<name>`). The tools the runtime runs are `providerExecuted`; a client tool's
 *   input streams (`tool-input-start`, `tool-input-delta`) and becomes `tool-input-available` only when the turn opens
 *   its `OpenClientToolCall`: then it is the client's to answer (`onToolCall`, `addToolOutput`).
 * - An approval is a `tool-approval-request` whose `approvalId` is the callback's id; its resolution, whoever
 *   answered, a `tool-approval-response` (and `tool-output-denied` for a denial).
 * - A sign-in is a `data-parley-sign-in` part (id: the callback's id) naming its sources; a subagent a
 *   `data-parley-subagent` part (id: the child session's id) updated as it works; both change in place.
 * - A failed turn ends with an `error` chunk; every stream ends with `finish` (`stop`, `tool-calls` when the turn
 *   waits on callbacks, `error`, `other` when cancelled) and `[DONE]`.
 */
import type { Callback } from "@parley/core/Callback"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Schema from "effect/Schema"

// =============================================================================
// Chunks
// =============================================================================

/** A UI message chunk as JSON (the `ai` package's `UIMessageChunk`). */
export type Chunk = { readonly type: string } & Record<string, unknown>

/** The headers of a UI message stream response (the `ai` package's `UI_MESSAGE_STREAM_HEADERS`). */
export const headers = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
  "x-vercel-ai-ui-message-stream": "v1"
} as const

/** One chunk as a Server-Sent Event. */
export const frame = (chunk: Chunk): string => `data: ${JSON.stringify(chunk)}\n\n`

/** The last frame of every stream. */
export const done = "data: [DONE]\n\n"

const isClientTool = (toolId: string) => toolId.startsWith("client.")

const errorText = (value: unknown): string => {
  if (typeof value === "string") return value
  if (typeof value === "object" && value !== null && "message" in value && typeof value.message === "string") {
    return value.message
  }
  return JSON.stringify(value) ?? "the tool failed"
}

/**
 * Makes the chunks of one stream, event by event. It keeps what the chunks opened (the step, the text parts, the tool
 * parts, the subagents) so that each event's chunks fit the ones before it. A stream that continues the message
 * (after an answer) is given the callbacks open when it starts: the client has their parts already, in the step
 * that was open when the turn stopped.
 */
export const makeTranslator = (root: string, turnId: string, continues?: ReadonlyArray<Callback>) => {
  let stepOpen = continues !== undefined
  const texts = new Map<string, string>()
  const tools = new Map<string, { readonly name: string; readonly client: boolean; available: boolean }>()
  const finished = new Set<string>()
  const approvals = new Map<string, string>()
  const signIns = new Map<string, Callback>()
  const subagents = new Map<string, Record<string, unknown>>()
  for (const callback of continues ?? []) {
    if (callback._tag === "OpenSignIn") {
      signIns.set(callback.id, callback)
      continue
    }
    const request = callback.request
    tools.set(request.toolCallId, {
      name: request.tool.name,
      client: isClientTool(request.tool.id),
      available: callback._tag === "OpenClientToolCall"
    })
    if (callback._tag === "OpenApproval") approvals.set(callback.id, request.toolCallId)
  }

  const closeStep = (out: Array<Chunk>) => {
    for (const [id] of texts) out.push({ type: "text-end", id })
    texts.clear()
    if (stepOpen) out.push({ type: "finish-step" })
    stepOpen = false
  }
  const openStep = (out: Array<Chunk>) => {
    if (!stepOpen) out.push({ type: "start-step" })
    stepOpen = true
  }
  const toolPart = (
    out: Array<Chunk>,
    call: { readonly toolCallId: string; readonly name: string; readonly toolId: string; readonly input: unknown }
  ) => {
    if (tools.has(call.toolCallId)) return
    openStep(out)
    const client = isClientTool(call.toolId)
    tools.set(call.toolCallId, { name: call.name, client, available: !client })
    if (client) {
      out.push({ type: "tool-input-start", toolCallId: call.toolCallId, toolName: call.name })
      out.push({ type: "tool-input-delta", toolCallId: call.toolCallId, inputTextDelta: JSON.stringify(call.input) })
    } else {
      out.push({
        type: "tool-input-available",
        toolCallId: call.toolCallId,
        toolName: call.name,
        input: call.input,
        providerExecuted: true
      })
    }
  }
  const output = (out: Array<Chunk>, toolCallId: string, isFailure: boolean, result: unknown) => {
    if (finished.has(toolCallId) || !tools.has(toolCallId)) return
    finished.add(toolCallId)
    const executed = !tools.get(toolCallId)!.client
    out.push(
      isFailure
        ? { type: "tool-output-error", toolCallId, errorText: errorText(result), providerExecuted: executed }
        : { type: "tool-output-available", toolCallId, output: result, providerExecuted: executed }
    )
  }
  const signInData = (callback: Callback, status: string): Chunk => ({
    type: "data-parley-sign-in",
    id: callback.id,
    data: {
      callbackId: callback.id,
      sessionId: callback.sessionId,
      turnId: callback.rootTurnId ?? callback.turnId,
      status,
      sources: callback._tag === "OpenSignIn" ?
        callback.requests.map((request) => ({
          id: request.id,
          source: request.source,
          ...(request.authorizationUrl === undefined ? {} : { authorizationUrl: request.authorizationUrl }),
          ...(request.scopes === undefined ? {} : { scopes: request.scopes })
        })) :
        []
    }
  })
  const subagent = (out: Array<Chunk>, childSessionId: string, update: Record<string, unknown>) => {
    const data = { ...(subagents.get(childSessionId) ?? { sessionId: childSessionId }), ...update }
    subagents.set(childSessionId, data)
    out.push({ type: "data-parley-subagent", id: childSessionId, data })
  }

  /** The chunks that open the stream. */
  const start = (): Array<Chunk> => [{ type: "start", messageId: turnId }]

  /** The chunks of one event. */
  const event = (event: TurnEvent): Array<Chunk> => {
    const out: Array<Chunk> = []
    const own = event.sessionId === root
    switch (event._tag) {
      case "ModelStepStarted": {
        if (!own) break
        closeStep(out)
        openStep(out)
        break
      }
      case "MessageDelta": {
        if (!own) break
        openStep(out)
        if (!texts.has(event.messageId)) {
          texts.set(event.messageId, "")
          out.push({ type: "text-start", id: event.messageId })
        }
        texts.set(event.messageId, texts.get(event.messageId)! + event.delta)
        out.push({ type: "text-delta", id: event.messageId, delta: event.delta })
        break
      }
      case "MessageAborted": {
        if (!own) break
        if (texts.has(event.messageId)) {
          out.push({ type: "text-end", id: event.messageId })
          texts.delete(event.messageId)
        }
        break
      }
      case "MessageCompleted": {
        if (!own) {
          subagent(out, event.sessionId, { text: event.text })
          break
        }
        openStep(out)
        event.reasoning.forEach((reasoning, index) => {
          const id = `${event.messageId}-reasoning-${index}`
          out.push({ type: "reasoning-start", id })
          out.push({ type: "reasoning-delta", id, delta: reasoning.text })
          out.push({ type: "reasoning-end", id })
        })
        const streamed = texts.get(event.messageId)
        if (streamed === undefined && event.text.length > 0) {
          out.push({ type: "text-start", id: event.messageId })
          out.push({ type: "text-delta", id: event.messageId, delta: event.text })
          out.push({ type: "text-end", id: event.messageId })
        } else if (streamed !== undefined) {
          if (event.text.startsWith(streamed) && event.text.length > streamed.length) {
            out.push({ type: "text-delta", id: event.messageId, delta: event.text.slice(streamed.length) })
          }
          out.push({ type: "text-end", id: event.messageId })
          texts.delete(event.messageId)
        }
        break
      }
      case "ToolCallStarted": {
        toolPart(out, { toolCallId: event.toolCallId, name: event.name, toolId: event.toolId, input: event.arguments })
        break
      }
      case "ToolCallCompleted": {
        output(out, event.toolCallId, event.isFailure, event.result)
        break
      }
      case "CallbackOpened": {
        const callback = event.callback
        if (callback._tag === "OpenApproval") {
          const request = callback.request
          toolPart(out, {
            toolCallId: request.toolCallId,
            name: request.tool.name,
            toolId: request.tool.id,
            input: request.arguments
          })
          approvals.set(callback.id, request.toolCallId)
          out.push({ type: "tool-approval-request", approvalId: callback.id, toolCallId: request.toolCallId })
        } else if (callback._tag === "OpenClientToolCall") {
          const request = callback.request
          toolPart(out, {
            toolCallId: request.toolCallId,
            name: request.tool.name,
            toolId: request.tool.id,
            input: request.arguments
          })
          const tool = tools.get(request.toolCallId)!
          if (!tool.available) {
            tool.available = true
            out.push({
              type: "tool-input-available",
              toolCallId: request.toolCallId,
              toolName: request.tool.name,
              input: request.arguments
            })
          }
        } else {
          signIns.set(callback.id, callback)
          out.push(signInData(callback, "open"))
        }
        break
      }
      case "CallbackResolved": {
        const toolCallId = approvals.get(event.callbackId)
        if (toolCallId !== undefined) {
          approvals.delete(event.callbackId)
          const approved = event.answer?._tag === "AllowApproval"
          const reason = event.answer?._tag === "DenyApproval" ? event.answer.reason : undefined
          out.push({
            type: "tool-approval-response",
            approvalId: event.callbackId,
            approved,
            ...(reason === undefined ? event.resolution === "answered" ? {} : { reason: event.resolution } : { reason })
          })
          if (!approved && !finished.has(toolCallId)) {
            finished.add(toolCallId)
            out.push({ type: "tool-output-denied", toolCallId })
          }
          break
        }
        const signIn = signIns.get(event.callbackId)
        if (signIn !== undefined) {
          out.push(signInData(signIn, event.resolution))
          break
        }
        break
      }
      case "SubagentStarted": {
        subagent(out, event.childSessionId, { agent: event.agent, task: event.task, status: "running" })
        break
      }
      case "SubagentEnded": {
        subagent(out, event.childSessionId, { status: event.state._tag })
        break
      }
      case "TurnBlocked": {
        if (!own || event.turnId !== turnId) break
        closeStep(out)
        out.push({ type: "finish", finishReason: "tool-calls" })
        break
      }
      case "TurnEnded": {
        if (!own || event.turnId !== turnId) break
        closeStep(out)
        const state = event.state
        if (state._tag === "Failed") {
          out.push({ type: "error", errorText: errorText(state.error) })
          out.push({ type: "finish", finishReason: "error" })
        } else {
          out.push({ type: "finish", finishReason: state._tag === "Completed" ? "stop" : "other" })
        }
        break
      }
      default:
        break
    }
    return out
  }
  return { start, event }
}

// =============================================================================
// Requests
// =============================================================================

/** A part of a UI message, as far as the server reads it (every other field is ignored). */
const Part = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  toolCallId: Schema.optionalKey(Schema.String),
  state: Schema.optionalKey(Schema.String),
  output: Schema.optionalKey(Schema.Unknown),
  errorText: Schema.optionalKey(Schema.String),
  approval: Schema.optionalKey(Schema.Struct({
    id: Schema.String,
    approved: Schema.optionalKey(Schema.Boolean),
    reason: Schema.optionalKey(Schema.String)
  }))
})

const Message = Schema.Struct({
  id: Schema.String,
  role: Schema.Literals(["system", "user", "assistant"]),
  parts: Schema.Array(Schema.Unknown)
})

/** The body `useChat`'s `DefaultChatTransport` posts: the chat's id (a Parley session id) and its messages. */
export const ChatRequest = Schema.Struct({
  id: Schema.String,
  messages: Schema.Array(Message),
  trigger: Schema.optionalKey(Schema.String),
  messageId: Schema.optionalKey(Schema.String)
})
export type ChatRequest = typeof ChatRequest.Type

const decodePart = Schema.decodeUnknownOption(Part)

/** What a message's parts say, as far as the server trusts them: the user's text, the answers it proposes. */
export interface Proposed {
  readonly text: string
  /** Approval ids with the client's decision. */
  readonly approvals: ReadonlyArray<{ readonly id: string; readonly approved: boolean; readonly reason?: string }>
  /** Tool call ids with the client's output (or error). */
  readonly outputs: ReadonlyArray<
    { readonly toolCallId: string; readonly isFailure: boolean; readonly output: unknown }
  >
}

/**
 * The text and answers of the last message. Only what an open callback of the turn asks is ever used: the rest of the
 * list (every earlier approval, output, message) is the client's copy of the past, and read as nothing.
 */
export const proposed = (request: ChatRequest): Proposed => {
  const last = request.messages.at(-1)
  const texts: Array<string> = []
  const approvals: Array<{ id: string; approved: boolean; reason?: string }> = []
  const outputs: Array<{ toolCallId: string; isFailure: boolean; output: unknown }> = []
  for (const raw of last?.parts ?? []) {
    const decoded = decodePart(raw)
    if (decoded._tag === "None") continue
    const part = decoded.value
    if (part.type === "text" && last?.role === "user" && part.text !== undefined) texts.push(part.text)
    if (part.state === "approval-responded" && part.approval?.approved !== undefined) {
      approvals.push({
        id: part.approval.id,
        approved: part.approval.approved,
        ...(part.approval.reason === undefined ? {} : { reason: part.approval.reason })
      })
    }
    if (part.toolCallId !== undefined && part.state === "output-available") {
      outputs.push({ toolCallId: part.toolCallId, isFailure: false, output: part.output })
    }
    if (part.toolCallId !== undefined && part.state === "output-error") {
      outputs.push({ toolCallId: part.toolCallId, isFailure: true, output: part.errorText ?? "the tool failed" })
    }
  }
  return { text: last?.role === "user" ? texts.join("\n") : "", approvals, outputs }
}
