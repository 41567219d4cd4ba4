/**
 * AG-UI, spoken by Parley: a turn's events as AG-UI events (Effect's `AgUiSchema.Event`), and the answers a
 * `RunAgentInput` carries.
 *
 * - A run is a stretch of one turn: `RUN_STARTED`, then a `STATE_SNAPSHOT` of the callbacks open in the turn
 *   (`{ openCallbacks: [...] }`, sent again whenever one opens or is resolved), until the turn ends (`RUN_FINISHED`
 *   with a `success` outcome, `cancelled`, or `RUN_ERROR`) or waits on callbacks (`RUN_FINISHED` with an `interrupt`
 *   outcome: one interrupt per open callback, its id the callback's; `GET /callbacks` lists the answer each expects).
 * - Each model step is a `STEP_STARTED` … `STEP_FINISHED` (`step-<n>`), its text `TEXT_MESSAGE_*`; a tool call is
 *   `TOOL_CALL_START` / `TOOL_CALL_ARGS` / `TOOL_CALL_END`, its result `TOOL_CALL_RESULT`.
 * - A subagent is `SUBAGENT_STARTED` / `SUBAGENT_FINISHED` (`subagentRunId`: the child session, `parentSubagentRunId`
 *   the subagent that started it); the child's own text and tool calls carry its `subagentRunId`. A run ends each
 *   subagent's segment before it finishes: one still working when the run waits on callbacks (or when the turn ends
 *   and it goes on, started without `agents.wait`) ends it `suspended`, naming the interrupts it raised itself, and
 *   the next run of the turn starts it again with the same id.
 * - Callbacks are interrupts (`subagentRunId` on those a subagent raised): a client resumes them with `resume` entries (`{ approved, reason? }` for an approval,
 *   the tool's result for a client tool, `{ connected, denied }` for a sign-in; `cancelled` denies). A client tool
 *   call is a frontend tool call too: a client without interrupts answers it with a `tool` message (its `content`
 *   the result as JSON).
 */
import type { Callback } from "@parley/core/Callback"
import type { SubagentStarted, TurnEvent } from "@parley/core/TurnEvent"
import type * as AgUiSchema from "effect/ai/AgUiSchema"

// =============================================================================
// Events
// =============================================================================

export type Event = AgUiSchema.Event

/** One event as a Server-Sent Event (what `@ag-ui/client`'s `HttpAgent` reads). */
export const frame = (event: Event): string => `data: ${JSON.stringify(event)}\n\n`

const text = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value) ?? "null")

const reasonOf = (callback: Callback) => callback.kind

/** The open callbacks as the state snapshot shows them. */
const described = (callback: Callback) => ({
  id: callback.id,
  kind: callback.kind,
  sessionId: callback.sessionId,
  turnId: callback.rootTurnId ?? callback.turnId,
  ...(callback._tag === "OpenSignIn"
    ? { sources: callback.requests.map((request) => request.source) }
    : {
      toolCallId: callback.request.toolCallId,
      tool: callback.request.tool.name,
      arguments: callback.request.arguments
    })
})

/** An interrupt of the run for an open callback (`subagentRunId`: the subagent that raised it, not the root). */
export const interruptOf = (callback: Callback, root: string): AgUiSchema.Interrupt => ({
  ...(callback.sessionId === root ? {} : { subagentRunId: callback.sessionId }),
  id: callback.id,
  reason: reasonOf(callback),
  message: callback._tag === "OpenApproval"
    ? `approve ${callback.request.tool.name}?`
    : callback._tag === "OpenClientToolCall"
    ? `run ${callback.request.tool.name} and give its result`
    : `sign in to ${callback.requests.map((request) => request.source).join(", ")}`,
  ...(callback._tag === "OpenSignIn" ? {} : { toolCallId: callback.request.toolCallId }),
  ...(callback.expiresAt === undefined ? {} : { expiresAt: callback.expiresAt.toString() }),
  metadata: { sessionId: callback.sessionId, turnId: callback.rootTurnId ?? callback.turnId }
})

/**
 * Makes the events of one run, event by event. `open` is the callbacks open when the run starts, `working` the
 * subagents of the turn that started before it and have not ended (in the order they started).
 */
export const makeTranslator = (
  input: { readonly threadId: string; readonly runId: string },
  root: string,
  turnId: string,
  open: ReadonlyArray<Callback>,
  working: ReadonlyArray<SubagentStarted> = []
) => {
  const callbacks = new Map<string, Callback>(open.map((callback) => [callback.id, callback]))
  // The subagents whose segment of this run is open, in the order they started: a parent before its children.
  const active = new Set<string>()
  const messages = new Set<string>()
  // The tool calls of the callbacks open when the run starts: the client has them from the run before.
  const tools = new Set<string>(
    open.flatMap((callback) => (callback._tag === "OpenSignIn" ? [] : [callback.request.toolCallId]))
  )
  let step: string | undefined
  let steps = 0
  const snapshot = (): Event => ({
    type: "STATE_SNAPSHOT",
    snapshot: { openCallbacks: [...callbacks.values()].map(described) }
  })
  const endStep = (out: Array<Event>) => {
    for (const messageId of messages) out.push({ type: "TEXT_MESSAGE_END", messageId })
    messages.clear()
    if (step !== undefined) out.push({ type: "STEP_FINISHED", stepName: step })
    step = undefined
  }
  const sub = (sessionId: string) => (sessionId === root ? {} : { subagentRunId: sessionId })
  const toolCall = (
    out: Array<Event>,
    sessionId: string,
    call: { readonly toolCallId: string; readonly name: string; readonly input: unknown }
  ) => {
    if (tools.has(call.toolCallId)) return
    tools.add(call.toolCallId)
    out.push({ type: "TOOL_CALL_START", toolCallId: call.toolCallId, toolCallName: call.name, ...sub(sessionId) })
    out.push({ type: "TOOL_CALL_ARGS", toolCallId: call.toolCallId, delta: text(call.input), ...sub(sessionId) })
    out.push({ type: "TOOL_CALL_END", toolCallId: call.toolCallId, ...sub(sessionId) })
  }

  const startSubagent = (out: Array<Event>, started: SubagentStarted) => {
    if (active.has(started.childSessionId)) return
    active.add(started.childSessionId)
    out.push({
      type: "SUBAGENT_STARTED",
      subagentRunId: started.childSessionId,
      name: started.agent,
      description: started.task,
      ...(active.has(started.sessionId) ? { parentSubagentRunId: started.sessionId } : {}),
      ...(started.toolCallId === undefined ? {} : { parentToolCallId: started.toolCallId })
    })
  }
  /** Ends the open segments, children first: each subagent `suspended`, with the interrupts it raised itself. */
  const suspendSubagents = (out: Array<Event>, interrupts: ReadonlyArray<AgUiSchema.Interrupt>) => {
    for (const subagentRunId of [...active].reverse()) {
      const own = interrupts.filter((interrupt) => callbacks.get(interrupt.id)?.sessionId === subagentRunId)
      out.push({
        type: "SUBAGENT_FINISHED",
        subagentRunId,
        outcome: { type: "suspended", interruptIds: own.map((interrupt) => interrupt.id) }
      })
    }
    active.clear()
  }

  const start = (): Array<Event> => {
    const out: Array<Event> = [{ type: "RUN_STARTED", threadId: input.threadId, runId: input.runId }]
    for (const started of working) startSubagent(out, started)
    out.push(snapshot())
    return out
  }

  const event = (event: TurnEvent): Array<Event> => {
    const out: Array<Event> = []
    const own = event.sessionId === root
    switch (event._tag) {
      case "ModelStepStarted": {
        if (!own) break
        endStep(out)
        steps += 1
        step = `step-${event.step}`
        out.push({ type: "STEP_STARTED", stepName: step })
        break
      }
      case "MessageDelta": {
        if (!messages.has(event.messageId)) {
          messages.add(event.messageId)
          out.push({
            type: "TEXT_MESSAGE_START",
            messageId: event.messageId,
            role: "assistant",
            ...sub(event.sessionId)
          })
        }
        out.push({
          type: "TEXT_MESSAGE_CONTENT",
          messageId: event.messageId,
          delta: event.delta,
          ...sub(event.sessionId)
        })
        break
      }
      case "MessageCompleted": {
        if (!messages.has(event.messageId)) {
          if (event.text.length === 0) break
          out.push({
            type: "TEXT_MESSAGE_START",
            messageId: event.messageId,
            role: "assistant",
            ...sub(event.sessionId)
          })
          out.push({
            type: "TEXT_MESSAGE_CONTENT",
            messageId: event.messageId,
            delta: event.text,
            ...sub(event.sessionId)
          })
        }
        messages.delete(event.messageId)
        out.push({ type: "TEXT_MESSAGE_END", messageId: event.messageId, ...sub(event.sessionId) })
        break
      }
      case "ToolCallStarted": {
        toolCall(out, event.sessionId, { toolCallId: event.toolCallId, name: event.name, input: event.arguments })
        break
      }
      case "ToolCallCompleted": {
        out.push({
          type: "TOOL_CALL_RESULT",
          messageId: `${event.toolCallId}-result`,
          toolCallId: event.toolCallId,
          content: text(event.result),
          role: "tool",
          ...sub(event.sessionId)
        })
        break
      }
      case "CallbackOpened": {
        const callback = event.callback
        if (callback._tag !== "OpenSignIn") {
          toolCall(out, callback.sessionId, {
            toolCallId: callback.request.toolCallId,
            name: callback.request.tool.name,
            input: callback.request.arguments
          })
        }
        callbacks.set(callback.id, callback)
        out.push(snapshot())
        break
      }
      case "CallbackResolved": {
        if (callbacks.delete(event.callbackId)) out.push(snapshot())
        break
      }
      case "SubagentStarted": {
        startSubagent(out, event)
        break
      }
      case "SubagentEnded": {
        if (!active.delete(event.childSessionId)) break
        if (event.state._tag === "Failed") {
          out.push({ type: "SUBAGENT_ERROR", subagentRunId: event.childSessionId, message: text(event.state.error) })
        } else {
          out.push({
            type: "SUBAGENT_FINISHED",
            subagentRunId: event.childSessionId,
            ...(event.state._tag === "Completed" ? { result: event.state.text } : {})
          })
        }
        break
      }
      case "TurnBlocked": {
        if (!own || event.turnId !== turnId) break
        endStep(out)
        const waiting = event.callbackIds.flatMap((id) => {
          const callback = callbacks.get(id)
          return callback === undefined ? [] : [interruptOf(callback, root)]
        })
        suspendSubagents(out, waiting)
        const [first, ...rest] = waiting
        out.push({
          type: "RUN_FINISHED",
          threadId: input.threadId,
          runId: input.runId,
          ...(first === undefined ? {} : { outcome: { type: "interrupt", interrupts: [first, ...rest] } })
        })
        break
      }
      case "TurnEnded": {
        if (!own || event.turnId !== turnId) break
        endStep(out)
        suspendSubagents(out, [])
        const state = event.state
        if (state._tag === "Failed") {
          out.push({ type: "RUN_ERROR", message: text(state.error) })
        } else {
          out.push({
            type: "RUN_FINISHED",
            threadId: input.threadId,
            runId: input.runId,
            ...(state._tag === "Completed" ? { result: state.text } : {}),
            outcome: state._tag === "Completed" ? { type: "success" } : { type: "cancelled" }
          })
        }
        break
      }
      default:
        break
    }
    return out
  }
  return { start, event, steps: () => steps }
}
