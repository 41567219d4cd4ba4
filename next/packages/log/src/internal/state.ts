/** Helpers of the projection shared by `evolve` and the queries: reading and updating sessions, turns and calls. */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { Callback } from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type * as DateTime from "effect/DateTime"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { CallbackRecord, CallStage, Message, Session, TreeState, Turn } from "../TreeState.js"

export const newSession = (
  sessionId: SessionId,
  agent: AgentSpec,
  createdAt: DateTime.Utc,
  parent: Session["parent"],
  rootTurnId: TurnId | undefined
): Session => ({
  sessionId,
  agent,
  createdAt,
  parent,
  rootTurnId,
  connected: [],
  queue: [],
  running: undefined,
  last: undefined,
  children: [],
  conversation: [],
  requests: HashMap.empty()
})

export const updateSession = (state: TreeState, sessionId: SessionId, f: (session: Session) => Session): TreeState => {
  const session = HashMap.get(state.sessions, sessionId)
  return Option.isNone(session)
    ? state
    : { ...state, sessions: HashMap.set(state.sessions, sessionId, f(session.value)) }
}

export const updateTurn = (state: TreeState, turnId: TurnId, f: (turn: Turn) => Turn): TreeState => {
  const turn = HashMap.get(state.turns, turnId)
  return Option.isNone(turn) ? state : { ...state, turns: HashMap.set(state.turns, turnId, f(turn.value)) }
}

export const updateCall = (state: TreeState, turnId: TurnId, toolCallId: string, stage: CallStage): TreeState =>
  updateTurn(state, turnId, (turn) => ({
    ...turn,
    calls: turn.calls.map((call) => (call.toolCallId === toolCallId ? { ...call, stage } : call))
  }))

export const last = <A>(items: ReadonlyArray<A>): A | undefined => items[items.length - 1]

/** Adds to the assistant message of `step`, or starts it. */
export const toAssistant = (
  conversation: ReadonlyArray<Message>,
  step: string,
  f: (message: Extract<Message, { role: "assistant" }>) => Extract<Message, { role: "assistant" }>
): ReadonlyArray<Message> => {
  const end = last(conversation)
  if (end !== undefined && end.role === "assistant" && end.step === step) {
    return [...conversation.slice(0, -1), f(end)]
  }
  return [...conversation, f({ role: "assistant", step, text: "", reasoning: [], toolCalls: [] })]
}

/** Adds a tool result, keeping the results in the order of the calls of the assistant message before them. */
export const toToolMessage = (
  conversation: ReadonlyArray<Message>,
  result: Extract<Message, { role: "tool" }>["results"][number]
): ReadonlyArray<Message> => {
  const end = last(conversation)
  if (end !== undefined && end.role === "tool") {
    const assistant = conversation[conversation.length - 2]
    const order = assistant?.role === "assistant" ? assistant.toolCalls.map((call) => call.id) : []
    const results = [...end.results, result].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id))
    return [...conversation.slice(0, -1), { role: "tool", results }]
  }
  return [...conversation, { role: "tool", results: [result] }]
}

export const stepOf = (turn: Turn | undefined): string => turn?.step?.messageId ?? "step_0"

export const callbackToolCallId = (callback: Callback): string | undefined =>
  callback._tag === "OpenSignIn" ? callback.requests[0].toolCallId : callback.request.toolCallId

export const getTurn = (state: TreeState, turnId: TurnId): Turn | undefined =>
  Option.getOrUndefined(HashMap.get(state.turns, turnId))

export const getSession = (state: TreeState, sessionId: SessionId): Session | undefined =>
  Option.getOrUndefined(HashMap.get(state.sessions, sessionId))

export const getCallback = (state: TreeState, callbackId: CallbackId): CallbackRecord | undefined =>
  Option.getOrUndefined(HashMap.get(state.callbacks, callbackId))
