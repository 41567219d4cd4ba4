/** `evolve`'s rules: how each stored event changes a tree's state. */
import { childSpec } from "@parley/core/AgentSpec"
import type { Answer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { Call, CallbackRecord, TreeState, Turn } from "../TreeState.js"
import {
  callbackToolCallId,
  getTurn,
  newSession,
  stepOf,
  toAssistant,
  toToolMessage,
  updateCall,
  updateSession,
  updateTurn
} from "./state.js"

/**
 * An approval that edited its call: the call runs with the approved arguments, and the conversation shows the call
 * as made with them (the model's own arguments stay in its `ToolCallStarted`, the approved ones in the answer).
 */
const editCall = (state: TreeState, callback: Callback, answer: Answer | undefined): TreeState => {
  if (callback._tag !== "OpenApproval" || answer?._tag !== "AllowApproval" || answer.arguments === undefined) {
    return state
  }
  const { toolCallId } = callback.request
  const edited = answer.arguments
  const next = updateTurn(state, callback.turnId, (turn) => ({
    ...turn,
    calls: turn.calls.map((call) => (call.toolCallId === toolCallId ? { ...call, arguments: edited } : call))
  }))
  return updateSession(next, callback.sessionId, (session) => ({
    ...session,
    conversation: session.conversation.map((message) =>
      message.role === "assistant" && message.toolCalls.some((call) => call.id === toolCallId)
        ? {
          ...message,
          toolCalls: message.toolCalls.map((call) => call.id === toolCallId ? { ...call, params: edited } : call)
        }
        : message
    )
  }))
}

export const applyEvent = (state: TreeState, event: TurnEvent): TreeState => {
  switch (event._tag) {
    case "TurnQueued": {
      const turn: Turn = {
        turnId: event.turnId,
        sessionId: event.sessionId,
        input: event.input,
        cursor: event.seq,
        startedSeq: undefined,
        endedSeq: undefined,
        cause: event.cause,
        trace: event.trace,
        status: "queued",
        final: undefined,
        step: undefined,
        modelPending: false,
        steps: 0,
        calls: []
      }
      const next = { ...state, turns: HashMap.set(state.turns, event.turnId, turn) }
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        queue: [...session.queue, event.turnId],
        requests: event.requestId === undefined
          ? session.requests
          : HashMap.set(session.requests, event.requestId, event.turnId)
      }))
    }
    case "TurnStarted": {
      const next = updateTurn(state, event.turnId, (turn) => ({ ...turn, status: "running", startedSeq: event.seq }))
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        queue: session.queue.filter((id) => id !== event.turnId),
        running: event.turnId,
        conversation: [...session.conversation, { role: "user", text: event.input }]
      }))
    }
    case "ModelStepStarted":
      return updateTurn(state, event.turnId, (turn) => ({
        ...turn,
        step: { messageId: event.messageId, seq: event.seq },
        modelPending: true,
        steps: turn.steps + 1,
        calls: []
      }))
    case "MessageAborted":
      return updateTurn(
        state,
        event.turnId,
        // An aborted step is not a step: it is issued again, and `maxSteps` counts the steps that completed.
        (turn) =>
          turn.step?.messageId === event.messageId ? { ...turn, modelPending: false, steps: turn.steps - 1 } : turn
      )
    case "MessageDelta":
      return state
    case "MessageCompleted": {
      const step = event.messageId
      const next = updateTurn(state, event.turnId, (turn) => ({ ...turn, modelPending: false }))
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        conversation: toAssistant(
          session.conversation,
          step,
          (message) => ({ ...message, text: event.text, reasoning: event.reasoning })
        )
      }))
    }
    case "ToolCallStarted": {
      const step = stepOf(getTurn(state, event.turnId))
      const call: Call = {
        toolCallId: event.toolCallId,
        toolId: event.toolId,
        name: event.name,
        arguments: event.arguments,
        stage: { _tag: "Started" }
      }
      const next = updateTurn(
        state,
        event.turnId,
        (turn) => ({ ...turn, modelPending: false, calls: [...turn.calls, call] })
      )
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        conversation: toAssistant(session.conversation, step, (message) => ({
          ...message,
          toolCalls: [...message.toolCalls, { id: event.toolCallId, name: event.name, params: event.arguments }]
        }))
      }))
    }
    case "ToolExecutionStarted":
      return updateCall(
        state,
        event.turnId,
        event.toolCallId,
        event.executor === undefined ? { _tag: "Executing" } : { _tag: "Executing", executor: event.executor }
      )
    case "ToolCallCompleted": {
      const next = updateCall(state, event.turnId, event.toolCallId, {
        _tag: "Completed",
        isFailure: event.isFailure,
        result: event.result
      })
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        conversation: toToolMessage(session.conversation, {
          id: event.toolCallId,
          name: event.name,
          isFailure: event.isFailure,
          result: event.result
        })
      }))
    }
    case "CallbackOpened": {
      const callback = event.callback
      const record: CallbackRecord = { callback, seq: event.seq, resolution: undefined, answer: undefined }
      const next: TreeState = {
        ...state,
        callbacks: HashMap.set(state.callbacks, callback.id, record),
        open: [...state.open, callback.id]
      }
      const toolCallId = callbackToolCallId(callback)
      return toolCallId === undefined
        ? next
        : updateCall(next, callback.turnId, toolCallId, { _tag: "Callback", callbackId: callback.id })
    }
    case "CallbackResolved": {
      const record = HashMap.get(state.callbacks, event.callbackId)
      if (Option.isNone(record) || record.value.resolution !== undefined) return state
      const callback = record.value.callback
      const next: TreeState = {
        ...state,
        callbacks: HashMap.set(state.callbacks, event.callbackId, {
          ...record.value,
          resolution: event.resolution,
          answer: event.answer,
          // Only when there is one: a snapshot leaves an absent field out, and reads back the same record.
          ...(event.requestId === undefined ? {} : { requestId: event.requestId })
        }),
        open: state.open.filter((id) => id !== event.callbackId)
      }
      if (callback._tag === "OpenApproval") return editCall(next, callback, event.answer)
      if (callback._tag !== "OpenSignIn" || event.answer?._tag !== "SignInAnswer") return next
      const answer = event.answer
      const sources = callback.requests.filter((request) => answer.connectedIds.includes(request.id)).map((r) =>
        r.source
      )
      return updateSession(next, callback.sessionId, (session) => ({
        ...session,
        connected: [...new Set([...session.connected, ...sources])]
      }))
    }
    case "SubagentStarted": {
      const parent = Option.getOrUndefined(HashMap.get(state.sessions, event.sessionId))
      if (parent === undefined) return state
      const declared = parent.agent.subagents.find((subagent) => subagent.name === event.agent)
      if (declared === undefined) return state
      const child = newSession(
        event.childSessionId,
        childSpec(parent.agent, declared),
        event.at,
        { sessionId: event.sessionId, turnId: event.turnId, toolCallId: event.toolCallId ?? "" },
        parent.parent === undefined ? event.turnId : parent.rootTurnId
      )
      const next = { ...state, sessions: HashMap.set(state.sessions, event.childSessionId, child) }
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        children: [...session.children, event.childSessionId]
      }))
    }
    case "SubagentEnded":
    case "CancelRequested":
      return state
    case "TurnBlocked":
      return { ...state, blockedAt: event.seq }
    case "ApprovalGranted":
      return { ...state, grants: [...state.grants, event] }
    case "GrantRevoked":
      return { ...state, grants: state.grants.filter((grant) => grant.grantId !== event.grantId) }
    case "TurnEnded": {
      const next = updateTurn(state, event.turnId, (turn) => ({
        ...turn,
        status: "ended",
        endedSeq: event.seq,
        final: event.state,
        modelPending: false,
        calls: []
      }))
      return updateSession(next, event.sessionId, (session) => ({
        ...session,
        queue: session.queue.filter((id) => id !== event.turnId),
        running: session.running === event.turnId ? undefined : session.running,
        last: event.state
      }))
    }
  }
}
