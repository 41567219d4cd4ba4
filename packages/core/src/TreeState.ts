/**
 * The state of a tree — a root session and every subagent under it — as a pure projection of its log:
 * `evolve(state, event)` applies one event, `fold(header, events)` a whole log. Everything the engine decides from is
 * here (turns and their states, open callbacks, what each tool call waits for, connected sources, subagent links, each
 * session's conversation, built incrementally), so a restarted engine, another process or a client that reads the log
 * derives the same state.
 *
 * The state is an immutable value: `evolve` returns a new state and shares the rest (persistent `HashMap`s), so a
 * reader may keep an old state while the log moves on.
 *
 * A state is also a value of the schema `TreeState` (its `HashMap`s encoded as arrays of entries): `encodeSnapshot`
 * writes it as JSON text and `decodeSnapshot` reads it back, so a long tree is loaded from a stored snapshot and the
 * events after it (`foldFrom`) instead of from `seq` 0. `snapshotVersion` names the layout.
 *
 * @example
 * ```ts
 * import { AgentSpec, Ids, TreeState } from "@parley/core"
 * import { DateTime } from "effect"
 *
 * const header = {
 *   treeId: Ids.SessionId.make("ses_example"),
 *   agent: AgentSpec.make({ name: "assistant" }),
 *   createdAt: DateTime.unsafeMake(0)
 * }
 * const state = TreeState.fold(header, [])
 * console.log(TreeState.isBlocked(state)) // false: nothing runs, nothing waits
 * ```
 *
 * @since 0.1.0
 */
import type * as DateTime from "effect/DateTime"
import type * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { AgentSpec as AgentSpecSchema, childSpec } from "./AgentSpec.js"
import type { AgentSpec } from "./AgentSpec.js"
import { AllowApproval, Answer as AnswerSchema, ClientToolResult, DenyApproval, SignInAnswer } from "./Answer.js"
import type { Answer } from "./Answer.js"
import { Callback as CallbackSchema } from "./Callback.js"
import type { Callback } from "./Callback.js"
import {
  CallbackId as CallbackIdSchema,
  SessionId as SessionIdSchema,
  ToolId as ToolIdSchema,
  TurnId as TurnIdSchema
} from "./Ids.js"
import type { CallbackId, SessionId, ToolId, TurnId } from "./Ids.js"
import type { JsonSchema } from "./ToolSpec.js"
import { ApprovalGranted, Executor, Reasoning, Resolution, TraceContext, TurnCause } from "./TurnEvent.js"
import type { TurnEvent } from "./TurnEvent.js"
import { Blocked, Final } from "./TurnState.js"

// =============================================================================
// Models
// =============================================================================

/**
 * What a tree's log starts from: its id (the root session's), the root agent and when it was created. Subagents'
 * definitions are derived from the root's (`AgentSpec.childSpec`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Header {
  readonly treeId: SessionId
  readonly agent: AgentSpec
  readonly createdAt: DateTime.Utc
}

/**
 * One message of a session's conversation, in the order the model sees them.
 *
 * @since 0.1.0
 * @category Models
 */
export type Message =
  | { readonly role: "user"; readonly text: string }
  | {
    readonly role: "assistant"
    /** The model step (`messageId`) that produced it. */
    readonly step: string
    readonly text: string
    readonly reasoning: ReadonlyArray<Reasoning>
    readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly params: unknown }>
  }
  | {
    readonly role: "tool"
    readonly results: ReadonlyArray<
      { readonly id: string; readonly name: string; readonly isFailure: boolean; readonly result: unknown }
    >
  }

/**
 * Where a tool call stands:
 * - `Started`: asked for by the model, the policy not yet applied (for `agents.wait`: waiting for the subagents);
 * - `Callback`: waiting on (or just answered by) the callback `callbackId`;
 * - `Executing`: a tool of the runtime started (`ToolExecutionStarted`), under the lease of `executor` (absent in logs
 *   written before 0.2): only that owner, at that epoch, runs it;
 * - `Completed`: it has its result.
 *
 * @since 0.1.0
 * @category Models
 */
export type CallStage =
  | { readonly _tag: "Started" }
  | { readonly _tag: "Callback"; readonly callbackId: CallbackId }
  | { readonly _tag: "Executing"; readonly executor?: Executor | undefined }
  | { readonly _tag: "Completed"; readonly isFailure: boolean; readonly result: unknown }

/**
 * @since 0.1.0
 * @category Models
 */
export interface Call {
  readonly toolCallId: string
  readonly toolId: ToolId
  readonly name: string
  readonly arguments: unknown
  readonly stage: CallStage
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Turn {
  readonly turnId: TurnId
  readonly sessionId: SessionId
  readonly input: string
  /** The `seq` of its `TurnQueued`: where its events start. */
  readonly cursor: number
  /** The `seq` of its `TurnStarted`, once started. */
  readonly startedSeq: number | undefined
  /** The `seq` of its `TurnEnded`, once ended. */
  readonly endedSeq: number | undefined
  readonly cause: TurnCause | undefined
  /** The trace context its `TurnQueued` carries: the span of the turn in the engine that accepted it. */
  readonly trace: TraceContext | undefined
  readonly status: "queued" | "running" | "ended"
  readonly final: Final | undefined
  /** The turn's latest model step. */
  readonly step: { readonly messageId: string; readonly seq: number } | undefined
  /** Whether that step's result is not in the log yet (the model is being called). */
  readonly modelPending: boolean
  /** How many model steps the turn started, less those aborted by a crash (issued again, they count once). */
  readonly steps: number
  /** The tool calls of the turn's latest model step, in the model's order. */
  readonly calls: ReadonlyArray<Call>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Session {
  readonly sessionId: SessionId
  readonly agent: AgentSpec
  readonly createdAt: DateTime.Utc
  /** For a subagent: the session, turn and tool call that started it. */
  readonly parent: { readonly sessionId: SessionId; readonly turnId: TurnId; readonly toolCallId: string } | undefined
  /** For a subagent: the root turn during which its branch of the tree was started. */
  readonly rootTurnId: TurnId | undefined
  readonly connected: ReadonlyArray<string>
  /** Turns accepted and not yet started, oldest first. */
  readonly queue: ReadonlyArray<TurnId>
  readonly running: TurnId | undefined
  readonly last: Final | undefined
  readonly children: ReadonlyArray<SessionId>
  readonly conversation: ReadonlyArray<Message>
}

/**
 * A callback, open or closed, with the `seq` of its `CallbackOpened` and, once closed, how.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CallbackRecord {
  readonly callback: Callback
  readonly seq: number
  readonly resolution: Resolution | undefined
  readonly answer: Answer | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface TreeState {
  readonly treeId: SessionId
  /** The `seq` the next stored event gets (the log's length). */
  readonly nextSeq: number
  readonly sessions: HashMap.HashMap<SessionId, Session>
  readonly turns: HashMap.HashMap<TurnId, Turn>
  readonly callbacks: HashMap.HashMap<CallbackId, CallbackRecord>
  /** The open callbacks of the whole tree, in the order they opened. */
  readonly open: ReadonlyArray<CallbackId>
  /** The `seq` of a `TurnBlocked` that nothing happened after. */
  readonly blockedAt: number | undefined
  /** The grants in force (`ApprovalGranted` not revoked), oldest first. */
  readonly grants: ReadonlyArray<ApprovalGranted>
}

// =============================================================================
// Schemas
// =============================================================================

const MessageSchema = Schema.Union(
  Schema.Struct({ role: Schema.Literal("user"), text: Schema.String }),
  Schema.Struct({
    role: Schema.Literal("assistant"),
    step: Schema.String,
    text: Schema.String,
    reasoning: Schema.Array(Reasoning),
    toolCalls: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, params: Schema.Unknown }))
  }),
  Schema.Struct({
    role: Schema.Literal("tool"),
    results: Schema.Array(
      Schema.Struct({ id: Schema.String, name: Schema.String, isFailure: Schema.Boolean, result: Schema.Unknown })
    )
  })
)

const CallStageSchema = Schema.Union(
  Schema.TaggedStruct("Started", {}),
  Schema.TaggedStruct("Callback", { callbackId: CallbackIdSchema }),
  Schema.TaggedStruct("Executing", { executor: Schema.optional(Executor) }),
  Schema.TaggedStruct("Completed", { isFailure: Schema.Boolean, result: Schema.Unknown })
)

const CallSchema = Schema.Struct({
  toolCallId: Schema.String,
  toolId: ToolIdSchema,
  name: Schema.String,
  arguments: Schema.Unknown,
  stage: CallStageSchema
})

const TurnSchema = Schema.Struct({
  turnId: TurnIdSchema,
  sessionId: SessionIdSchema,
  input: Schema.String,
  cursor: Schema.Number,
  startedSeq: Schema.UndefinedOr(Schema.Number),
  endedSeq: Schema.UndefinedOr(Schema.Number),
  cause: Schema.UndefinedOr(TurnCause),
  trace: Schema.UndefinedOr(TraceContext),
  status: Schema.Literal("queued", "running", "ended"),
  final: Schema.UndefinedOr(Final),
  step: Schema.UndefinedOr(Schema.Struct({ messageId: Schema.String, seq: Schema.Number })),
  modelPending: Schema.Boolean,
  steps: Schema.Number,
  calls: Schema.Array(CallSchema)
})

const SessionSchema = Schema.Struct({
  sessionId: SessionIdSchema,
  agent: AgentSpecSchema,
  createdAt: Schema.DateTimeUtc,
  parent: Schema.UndefinedOr(
    Schema.Struct({ sessionId: SessionIdSchema, turnId: TurnIdSchema, toolCallId: Schema.String })
  ),
  rootTurnId: Schema.UndefinedOr(TurnIdSchema),
  connected: Schema.Array(Schema.String),
  queue: Schema.Array(TurnIdSchema),
  running: Schema.UndefinedOr(TurnIdSchema),
  last: Schema.UndefinedOr(Final),
  children: Schema.Array(SessionIdSchema),
  conversation: Schema.Array(MessageSchema)
})

const CallbackRecordSchema = Schema.Struct({
  callback: CallbackSchema,
  seq: Schema.Number,
  resolution: Schema.UndefinedOr(Resolution),
  answer: Schema.UndefinedOr(AnswerSchema)
})

const TreeStateSchema = Schema.Struct({
  treeId: SessionIdSchema,
  nextSeq: Schema.Number,
  sessions: Schema.HashMap({ key: SessionIdSchema, value: SessionSchema }),
  turns: Schema.HashMap({ key: TurnIdSchema, value: TurnSchema }),
  callbacks: Schema.HashMap({ key: CallbackIdSchema, value: CallbackRecordSchema }),
  open: Schema.Array(CallbackIdSchema),
  blockedAt: Schema.UndefinedOr(Schema.Number),
  grants: Schema.Array(ApprovalGranted)
}).annotations({ identifier: "TreeState" })

/**
 * The encoded form of a `TreeState`: plain JSON values, its `HashMap`s as arrays of `[key, value]` entries.
 *
 * @since 0.1.0
 * @category Models
 */
export type TreeStateEncoded = typeof TreeStateSchema.Encoded

/**
 * The schema of a whole state: every session (with its definition and conversation), turn, call and callback. Fields
 * that may be `undefined` are left out of the encoded form; decoding rebuilds the `HashMap`s.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const TreeState: Schema.Schema<TreeState, TreeStateEncoded> = TreeStateSchema

/**
 * The layout of snapshots that `encodeSnapshot` writes. It is raised whenever the layout of `TreeState` or the meaning
 * of `evolve` changes: a snapshot of another version is ignored and the log replayed from its start.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const snapshotVersion = 3

const TreeStateJson = Schema.parseJson(TreeStateSchema)
const encodeJson = Schema.encodeEither(TreeStateJson)
const decodeJson = Schema.decodeUnknownEither(TreeStateJson)

/**
 * A state as JSON text, to store beside its log (a snapshot of version `snapshotVersion`), so a tree is later loaded
 * from it and the events after `state.nextSeq` instead of from its whole log.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const encodeSnapshot = (state: TreeState): Either.Either<string, ParseResult.ParseError> => encodeJson(state)

/**
 * A state back from the JSON text `encodeSnapshot` wrote (of the same `snapshotVersion`): `foldFrom` it with the
 * events from its `nextSeq` on.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const decodeSnapshot = (json: string): Either.Either<TreeState, ParseResult.ParseError> => decodeJson(json)

// =============================================================================
// Constructors
// =============================================================================

const newSession = (
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
  conversation: []
})

/**
 * The state of a tree whose log is empty.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const empty = (header: Header): TreeState => ({
  treeId: header.treeId,
  nextSeq: 0,
  sessions: HashMap.make([
    header.treeId,
    newSession(header.treeId, header.agent, header.createdAt, undefined, undefined)
  ]),
  turns: HashMap.empty(),
  callbacks: HashMap.empty(),
  open: [],
  blockedAt: undefined,
  grants: []
})

// =============================================================================
// Evolve
// =============================================================================

const updateSession = (state: TreeState, sessionId: SessionId, f: (session: Session) => Session): TreeState => {
  const session = HashMap.get(state.sessions, sessionId)
  return Option.isNone(session)
    ? state
    : { ...state, sessions: HashMap.set(state.sessions, sessionId, f(session.value)) }
}

const updateTurn = (state: TreeState, turnId: TurnId, f: (turn: Turn) => Turn): TreeState => {
  const turn = HashMap.get(state.turns, turnId)
  return Option.isNone(turn) ? state : { ...state, turns: HashMap.set(state.turns, turnId, f(turn.value)) }
}

const updateCall = (state: TreeState, turnId: TurnId, toolCallId: string, stage: CallStage): TreeState =>
  updateTurn(state, turnId, (turn) => ({
    ...turn,
    calls: turn.calls.map((call) => (call.toolCallId === toolCallId ? { ...call, stage } : call))
  }))

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

const last = <A>(items: ReadonlyArray<A>): A | undefined => items[items.length - 1]

/** Adds to the assistant message of `step`, or starts it. */
const toAssistant = (
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
const toToolMessage = (
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

const stepOf = (turn: Turn | undefined): string => turn?.step?.messageId ?? "step_0"

const callbackToolCallId = (callback: Callback): string | undefined =>
  callback._tag === "OpenSignIn" ? callback.requests[0].toolCallId : callback.request.toolCallId

const getTurn = (state: TreeState, turnId: TurnId): Turn | undefined =>
  Option.getOrUndefined(HashMap.get(state.turns, turnId))

const applyEvent = (state: TreeState, event: TurnEvent): TreeState => {
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
      return updateSession(
        next,
        event.sessionId,
        (session) => ({ ...session, queue: [...session.queue, event.turnId] })
      )
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
      return updateCall(state, event.turnId, event.toolCallId, { _tag: "Executing", executor: event.executor })
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
          answer: event.answer
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

/**
 * Applies one event. Live `MessageDelta`s change nothing; an event the state already has (a `seq` below `nextSeq`) is
 * ignored.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const evolve = (state: TreeState, event: TurnEvent): TreeState => {
  if (event._tag === "MessageDelta" || event.seq < state.nextSeq) return state
  const next = applyEvent(state, event)
  return { ...next, nextSeq: event.seq + 1, blockedAt: event._tag === "TurnBlocked" ? event.seq : undefined }
}

/**
 * The state of a tree from its header and its log (or a state and the rest of its log).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fold: {
  (header: Header, events: Iterable<TurnEvent>): TreeState
} = (header, events) => foldFrom(empty(header), events)

/**
 * Applies events to a state.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const foldFrom = (state: TreeState, events: Iterable<TurnEvent>): TreeState => {
  let current = state
  for (const event of events) current = evolve(current, event)
  return current
}

// =============================================================================
// Queries
// =============================================================================

/**
 * @since 0.1.0
 * @category Utils
 */
export const session = (state: TreeState, sessionId: SessionId): Session | undefined =>
  Option.getOrUndefined(HashMap.get(state.sessions, sessionId))

/**
 * @since 0.1.0
 * @category Utils
 */
export const turn = (state: TreeState, turnId: TurnId): Turn | undefined => getTurn(state, turnId)

/**
 * @since 0.1.0
 * @category Utils
 */
export const callback = (state: TreeState, callbackId: CallbackId): CallbackRecord | undefined =>
  Option.getOrUndefined(HashMap.get(state.callbacks, callbackId))

/**
 * The root session's running turn.
 *
 * @since 0.1.0
 * @category Utils
 */
export const rootTurn = (state: TreeState): Turn | undefined => {
  const running = session(state, state.treeId)?.running
  return running === undefined ? undefined : getTurn(state, running)
}

/**
 * The sessions of the tree whose turn is running.
 *
 * @since 0.1.0
 * @category Utils
 */
export const runningTurns = (state: TreeState): ReadonlyArray<Turn> => {
  const turns: Array<Turn> = []
  for (const member of HashMap.values(state.sessions)) {
    const running = member.running === undefined ? undefined : getTurn(state, member.running)
    if (running !== undefined) turns.push(running)
  }
  return turns
}

/**
 * A session and every subagent under it, parents before children.
 *
 * @since 0.1.0
 * @category Utils
 */
export const subtree = (state: TreeState, sessionId: SessionId): ReadonlyArray<Session> => {
  const root = session(state, sessionId)
  return root === undefined ? [] : [root, ...root.children.flatMap((child) => subtree(state, child))]
}

const waits = (state: TreeState, call: Call): boolean =>
  call.stage._tag === "Callback"
    ? callback(state, call.stage.callbackId)?.resolution === undefined
    : call.stage._tag === "Started" && call.toolId === "agents.wait"

/**
 * Whether a running turn makes progress on its own. It does not when its model step is done and every tool call that
 * has no result waits: on an open callback, or in `agents.wait` (the subagents' turns count for themselves).
 *
 * @since 0.1.0
 * @category Utils
 */
export const isActive = (state: TreeState, turn: Turn): boolean =>
  turn.status === "running" &&
  !(!turn.modelPending && turn.calls.some((call) => call.stage._tag !== "Completed") &&
    turn.calls.every((call) => call.stage._tag === "Completed" || waits(state, call)))

/**
 * The tree cannot progress until a callback is answered: a root turn runs, callbacks are open, and no turn of the
 * tree makes progress on its own.
 *
 * @since 0.1.0
 * @category Guards
 */
export const isBlocked = (state: TreeState): boolean =>
  state.open.length > 0 && rootTurn(state) !== undefined &&
  !runningTurns(state).some((running) => isActive(state, running))

/**
 * The open callbacks a turn lists: for a root turn, its own and every subagent's (subagents outlive turns); for a
 * subagent's turn, its own.
 *
 * @since 0.1.0
 * @category Utils
 */
export const openCallbacks = (state: TreeState, turnId: TurnId): ReadonlyArray<Callback> => {
  const target = getTurn(state, turnId)
  if (target === undefined) return []
  const isRoot = target.sessionId === state.treeId
  const callbacks: Array<Callback> = []
  for (const id of state.open) {
    const record = callback(state, id)
    if (record === undefined) continue
    const cb = record.callback
    const listed = cb.sessionId === target.sessionId ? cb.turnId === turnId : isRoot
    if (listed) callbacks.push(cb)
  }
  return callbacks
}

/**
 * How a turn stands: its final state once ended, `Blocked` while its tree is blocked (root turns), `undefined`
 * while queued or making progress.
 *
 * @since 0.1.0
 * @category Utils
 */
export const turnState = (state: TreeState, turnId: TurnId): Final | Blocked | undefined => {
  const target = getTurn(state, turnId)
  if (target === undefined) return undefined
  if (target.final !== undefined) return target.final
  if (target.sessionId !== state.treeId || target.status !== "running" || !isBlocked(state)) return undefined
  return new Blocked({
    sessionId: target.sessionId,
    turnId,
    callbacks: openCallbacks(state, turnId),
    cursor: (state.blockedAt ?? state.nextSeq - 1) + 1
  }, true)
}

/**
 * Whether the subagent session `sessionId` belongs to the part of the tree the root turn `rootTurnId` started (its
 * own callbacks included). A subagent left running by an earlier turn does not, nor do the subagents it starts.
 *
 * @since 0.1.0
 * @category Utils
 */
export const fromRootTurn = (callback: Callback, rootTurnId: TurnId): boolean =>
  (callback.rootTurnId ?? callback.turnId) === rootTurnId

const toJson = (schema: Schema.Schema.Any): JsonSchema => JSONSchema.make(schema) as unknown as JsonSchema
const approvalAnswer = toJson(Schema.Union(AllowApproval, DenyApproval))
const signInAnswer = toJson(SignInAnswer)

/**
 * The JSON Schema of the answer a callback expects: `AllowApproval | DenyApproval`, a `SignInAnswer`, or a
 * `ClientToolResult` whose success `result` matches the tool's `success` schema (when the tool has one).
 *
 * @since 0.1.0
 * @category Utils
 */
export const answerSchema = (state: TreeState, cb: Callback): JsonSchema => {
  switch (cb._tag) {
    case "OpenApproval":
      return approvalAnswer
    case "OpenSignIn":
      return signInAnswer
    case "OpenClientToolCall": {
      const spec = session(state, cb.sessionId)?.agent.tools.find((tool) => tool.id === cb.request.tool.id)
      const base = toJson(ClientToolResult)
      return spec?.success === undefined ? base : {
        anyOf: [
          {
            type: "object",
            required: ["_tag", "isFailure", "result"],
            properties: { _tag: { enum: ["ClientToolResult"] }, isFailure: { enum: [false] }, result: spec.success }
          },
          {
            type: "object",
            required: ["_tag", "isFailure", "result"],
            properties: { _tag: { enum: ["ClientToolResult"] }, isFailure: { enum: [true] }, result: {} }
          }
        ]
      }
    }
  }
}

/**
 * The grant that decides a call of `toolId` in `sessionId` without asking, if any: the latest in force whose tool is
 * that id and whose scope covers the session (its own session, or the whole tree).
 *
 * @since 0.1.0
 * @category Utils
 */
export const grantFor = (state: TreeState, sessionId: SessionId, toolId: string): ApprovalGranted | undefined => {
  for (let i = state.grants.length - 1; i >= 0; i--) {
    const grant = state.grants[i]
    if (grant.toolPattern === toolId && (grant.scope === "tree" || grant.sessionId === sessionId)) return grant
  }
  return undefined
}
