/**
 * `decide(state, command, now, env)`: the engine's pure decision. It returns the events a command appends to the tree's
 * log (their `seq`s continue the state's) and the command's reply, or a typed rejection that appends nothing. All
 * answer validation lives here.
 *
 * After the command's own events, `settle` applies every transition the state calls for without outside input: a
 * queued turn starts when its session is free, a tool call goes through the policy, an answered callback moves its
 * tool call on, a step whose calls all have results calls the model again, `agents.wait` returns when its subagents
 * are done, and a tree that cannot progress reports `TurnBlocked`. The same transitions apply to events appended by
 * anyone (an answer from another process), so the engine only has to settle after reading them.
 *
 * Ids are derived from the tree id and the `seq` of the event that creates them, so a decision is deterministic.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { defaultMaxSteps } from "@parley/core/AgentSpec"
import type { Answer } from "@parley/core/Answer"
import * as Answers from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import {
  ApprovalRequest,
  ClientToolRequest,
  OpenApproval,
  OpenClientToolCall,
  OpenSignIn,
  SignInRequest,
  ToolRef
} from "@parley/core/Callback"
import type { CallbackId, SessionId, ToolId, TurnId } from "@parley/core/Ids"
import type { ParleyError } from "@parley/core/ParleyError"
import {
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  SessionNotFound,
  StepLimitReached,
  TurnNotFound
} from "@parley/core/ParleyError"
import type { AnswerMismatch } from "@parley/core/ParleyError"
import { PermissionPolicy } from "@parley/core/Permissions"
import { TurnRef } from "@parley/core/Transport"
import * as TreeState from "@parley/core/TreeState"
import type { Reasoning, Resolution, TurnEvent } from "@parley/core/TurnEvent"
import {
  CallbackOpened,
  CallbackResolved,
  CancelRequested,
  MessageAborted,
  MessageCompleted,
  ModelStepStarted,
  SubagentEnded,
  SubagentStarted,
  ToolCallCompleted,
  ToolCallStarted,
  ToolExecutionStarted,
  TurnBlocked,
  TurnCause,
  TurnEnded,
  TurnQueued,
  TurnStarted
} from "@parley/core/TurnEvent"
import type { Final } from "@parley/core/TurnState"
import { Cancelled, Completed, Failed } from "@parley/core/TurnState"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as DateTime from "effect/DateTime"
import * as Either from "effect/Either"
import * as HashMap from "effect/HashMap"
import type { ResolvedTool } from "./agentTools.js"
import { checkClientToolResult } from "./jsonSchema.js"

// =============================================================================
// Commands
// =============================================================================

export interface ModelToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

export type Command =
  | { readonly _tag: "SendMessage"; readonly sessionId: SessionId; readonly input: string }
  | {
    readonly _tag: "Answer"
    readonly sessionId: SessionId
    readonly turnId: TurnId
    readonly callbackId: CallbackId
    readonly answer: Answer
  }
  | { readonly _tag: "Cancel"; readonly sessionId: SessionId }
  | {
    readonly _tag: "ModelStepDone"
    readonly turnId: TurnId
    readonly messageId: string
    readonly text: string
    readonly reasoning: ReadonlyArray<Reasoning>
    readonly toolCalls: ReadonlyArray<ModelToolCall>
  }
  | {
    readonly _tag: "ModelStepFailed"
    readonly turnId: TurnId
    readonly messageId: string
    readonly error: ParleyError
  }
  | {
    readonly _tag: "ToolFinished"
    readonly turnId: TurnId
    readonly toolCallId: string
    readonly isFailure: boolean
    readonly result: unknown
  }
  | { readonly _tag: "WorkFailed"; readonly turnId: TurnId; readonly error: ParleyError }
  | { readonly _tag: "Expire"; readonly callbackId: CallbackId }
  /** Re-issue model steps that were in flight when the tree was loaded (recovery), then settle. */
  | { readonly _tag: "Resume" }
  /** Nothing but settling: the log moved on (events appended by another writer). */
  | { readonly _tag: "Settle" }

export type Rejection =
  | AnswerMismatch
  | CallbackNotOpen
  | CallbackAlreadyAnswered
  | SessionNotFound
  | TurnNotFound

export type Reply = TurnRef | undefined

export interface Decision {
  readonly events: ReadonlyArray<TurnEvent>
  readonly state: TreeState.TreeState
  readonly reply: Either.Either<Reply, Rejection>
}

/** What decisions need to know beyond the log: the tools of an agent. */
export interface Env {
  readonly toolsOf: (agent: AgentSpec) => ReadonlyMap<string, ResolvedTool>
}

// =============================================================================
// The transaction: events appended one by one, each applied to the state at once
// =============================================================================

class Tx {
  readonly events: Array<TurnEvent> = []
  constructor(public state: TreeState.TreeState, readonly now: DateTime.Utc, readonly env: Env) {}

  get seq(): number {
    return this.state.nextSeq
  }

  emit<E extends TurnEvent>(make: (meta: { readonly seq: number; readonly at: DateTime.Utc }) => E): E {
    const event = make({ seq: this.state.nextSeq, at: this.now })
    this.state = TreeState.evolve(this.state, event)
    this.events.push(event)
    return event
  }

  /** An id derived from the tree's id and the `seq` of the event that creates it. */
  id(prefix: string, seq: number): string {
    return `${prefix}_${this.state.treeId.slice(4)}_${seq}`
  }

  session(sessionId: SessionId): TreeState.Session | undefined {
    return TreeState.session(this.state, sessionId)
  }

  turn(turnId: TurnId): TreeState.Turn | undefined {
    return TreeState.turn(this.state, turnId)
  }
}

const noValidation = true

const allowAll = new PermissionPolicy({ default: "allow", rules: [] })

interface ToolResult {
  readonly isFailure: boolean
  readonly result: unknown
}

const failure = (result: string): ToolResult => ({ isFailure: true, result })
const success = (result: unknown): ToolResult => ({ isFailure: false, result })

const unanswered = (resolution: Resolution | undefined, what: string): ToolResult => {
  switch (resolution) {
    case "expired":
      return failure(`The ${what} expired before anyone answered.`)
    case "cancelled":
      return failure(`The ${what} was cancelled.`)
    default:
      return failure(`The ${what} closed when its turn ended.`)
  }
}

// =============================================================================
// Turns
// =============================================================================

const queueTurn = (tx: Tx, sessionId: SessionId, input: string, cause: TurnCause | undefined): TurnId => {
  const turnId = tx.id("turn", tx.seq) as TurnId
  tx.emit((meta) => new TurnQueued({ sessionId, turnId, ...meta, input, cause }, noValidation))
  return turnId
}

const startStep = (tx: Tx, turn: TreeState.Turn) => {
  tx.emit((meta) =>
    new ModelStepStarted({
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      ...meta,
      messageId: `msg_${meta.seq}`,
      step: turn.steps
    }, noValidation)
  )
}

const startTurn = (tx: Tx, session: TreeState.Session, turnId: TurnId) => {
  const turn = tx.turn(turnId)
  if (turn === undefined) return
  const inherited = session.sessionId === tx.state.treeId
    ? tx.state.open.filter((id) => TreeState.callback(tx.state, id)?.callback.sessionId !== session.sessionId)
    : []
  tx.emit((meta) =>
    new TurnStarted({ sessionId: session.sessionId, turnId, ...meta, input: turn.input, inherited }, noValidation)
  )
  const started = tx.turn(turnId)
  if (started !== undefined) startStep(tx, started)
}

const resolve = (tx: Tx, record: TreeState.CallbackRecord, resolution: Resolution, answer?: Answer) => {
  const callback = record.callback
  tx.emit((meta) =>
    new CallbackResolved({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      ...meta,
      callbackId: callback.id,
      resolution,
      answer
    }, noValidation)
  )
}

const complete = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, result: ToolResult) => {
  tx.emit((meta) =>
    new ToolCallCompleted({
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      ...meta,
      toolCallId: call.toolCallId,
      toolId: call.toolId,
      name: call.name,
      isFailure: result.isFailure,
      result: result.result
    }, noValidation)
  )
}

/**
 * Ends a turn: its open callbacks close (`cancelled`, or `turn_ended`), its unfinished tool calls get a failed result
 * (the conversation stays whole for the model), `TurnEnded`, and for a subagent `SubagentEnded` in its parent's
 * session (under the parent's running turn, or the turn that started it when the parent is idle).
 */
const endTurn = (tx: Tx, turnId: TurnId, final: Final) => {
  const turn = tx.turn(turnId)
  if (turn === undefined || turn.status === "ended") return
  const cancelled = final._tag === "Cancelled"
  for (const id of tx.state.open) {
    const record = TreeState.callback(tx.state, id)
    if (record !== undefined && record.callback.turnId === turnId) {
      resolve(tx, record, cancelled ? "cancelled" : "turn_ended")
    }
  }
  const current = tx.turn(turnId) ?? turn
  for (const call of current.calls) {
    if (call.stage._tag === "Completed") continue
    complete(
      tx,
      current,
      call,
      failure(
        cancelled
          ? `The call to ${call.name} was cancelled.`
          : `The call to ${call.name} did not finish: its turn ended.`
      )
    )
  }
  tx.emit((meta) => new TurnEnded({ sessionId: turn.sessionId, turnId, ...meta, state: final }, noValidation))
  const session = tx.session(turn.sessionId)
  const parent = session?.parent === undefined ? undefined : tx.session(session.parent.sessionId)
  if (session?.parent !== undefined && parent !== undefined) {
    const link = session.parent
    tx.emit((meta) =>
      new SubagentEnded({
        sessionId: link.sessionId,
        turnId: parent.running ?? link.turnId,
        ...meta,
        childSessionId: turn.sessionId,
        childTurnId: turnId,
        state: final
      }, noValidation)
    )
  }
}

/** Cancels a session and every subagent under it: the deepest first, so each parent sees its children end. */
const cancelSubtree = (tx: Tx, sessionId: SessionId) => {
  const members = TreeState.subtree(tx.state, sessionId)
  for (const member of [...members].reverse()) {
    const current = tx.session(member.sessionId)
    if (current === undefined) continue
    const turnIds = [...(current.running === undefined ? [] : [current.running]), ...current.queue]
    for (const turnId of turnIds) endTurn(tx, turnId, new Cancelled({ sessionId: member.sessionId, turnId }, true))
  }
}

// =============================================================================
// Tool calls
// =============================================================================

const toolOf = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call): ResolvedTool | undefined => {
  const agent = tx.session(turn.sessionId)?.agent
  return agent === undefined ? undefined : tx.env.toolsOf(agent).get(call.name)
}

const refOf = (tool: ResolvedTool) =>
  new ToolRef({ id: tool.spec.id, name: tool.spec.name, annotations: tool.spec.annotations }, noValidation)

const openCallback = (
  tx: Tx,
  turn: TreeState.Turn,
  timeout: "approval" | "clientTool" | "none",
  make: (fields: {
    readonly id: CallbackId
    readonly sessionId: SessionId
    readonly turnId: TurnId
    readonly rootTurnId: TurnId | undefined
    readonly openedAt: DateTime.Utc
    readonly expiresAt: DateTime.Utc | undefined
  }) => Callback
) => {
  const session = tx.session(turn.sessionId)
  const duration = timeout === "none" ? undefined : session?.agent.timeouts[timeout]
  const callback = make({
    id: tx.id("cb", tx.seq) as CallbackId,
    sessionId: turn.sessionId,
    turnId: turn.turnId,
    rootTurnId: session?.parent === undefined ? turn.turnId : session.rootTurnId,
    openedAt: tx.now,
    expiresAt: duration === undefined ? undefined : DateTime.addDuration(tx.now, duration)
  })
  tx.emit((meta) =>
    new CallbackOpened({ sessionId: turn.sessionId, turnId: turn.turnId, ...meta, callback }, noValidation)
  )
}

const stringParam = (params: unknown, key: string): string | undefined => {
  const value = typeof params === "object" && params !== null ? (params as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

const required = (params: unknown, name: string, keys: ReadonlyArray<string>) => {
  const values: Array<string> = []
  for (const key of keys) {
    const value = stringParam(params, key)
    if (value === undefined) return Either.left(failure(`${name} needs a "${key}" string.`))
    values.push(value)
  }
  return Either.right(values)
}

const childOf = (tx: Tx, parent: TreeState.Session, sessionId: string): TreeState.Session | undefined =>
  parent.children.includes(sessionId as SessionId) ? tx.session(sessionId as SessionId) : undefined

const noChild = (sessionId: string) => failure(`There is no subagent session ${sessionId} started by this agent.`)

/** The subagents `agents.wait` waits for, or the failure it returns at once. */
const waitTargets = (tx: Tx, parent: TreeState.Session, params: unknown) => {
  const ids = typeof params === "object" && params !== null
    ? (params as Record<string, unknown>)["sessionIds"]
    : undefined
  if (!Array.isArray(ids)) return Either.right(parent.children.flatMap((id) => tx.session(id) ?? []))
  const targets: Array<TreeState.Session> = []
  for (const id of ids) {
    if (typeof id !== "string") continue
    const child = childOf(tx, parent, id)
    if (child === undefined) return Either.left(noChild(id))
    targets.push(child)
  }
  return Either.right(targets)
}

const waitResult = (targets: ReadonlyArray<TreeState.Session>) =>
  success(targets.map((child) => ({
    sessionId: child.sessionId,
    agent: child.agent.name,
    state: child.last?._tag ?? "NotStarted",
    ...(child.last?._tag === "Completed" ? { text: child.last.text } : {}),
    ...(child.last?._tag === "Failed" ? { error: child.last.error.message } : {})
  })))

/** `agents.wait` returns once none of its subagents has a turn running or queued. */
const settleWait = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call): boolean => {
  const parent = tx.session(turn.sessionId)
  if (parent === undefined) return false
  const targets = waitTargets(tx, parent, call.arguments)
  if (Either.isLeft(targets)) {
    complete(tx, turn, call, targets.left)
    return true
  }
  if (targets.right.some((child) => child.running !== undefined || child.queue.length > 0)) return false
  complete(tx, turn, call, waitResult(targets.right))
  return true
}

/** The `agents.*` builtins other than `wait`: pure changes of the tree. */
const runBuiltin = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, builtin: "spawn" | "message" | "interrupt") => {
  const parent = tx.session(turn.sessionId)
  if (parent === undefined) return
  const cause = new TurnCause({ sessionId: turn.sessionId, turnId: turn.turnId, toolCallId: call.toolCallId }, true)
  switch (builtin) {
    case "spawn": {
      const params = required(call.arguments, call.name, ["agent", "task"])
      if (Either.isLeft(params)) return complete(tx, turn, call, params.left)
      const [agent, task] = params.right
      if (!parent.agent.subagents.some((subagent) => subagent.name === agent)) {
        const known = parent.agent.subagents.map((subagent) => subagent.name).join(", ")
        return complete(tx, turn, call, failure(`There is no subagent named ${agent} (declared: ${known}).`))
      }
      const childSessionId = tx.id("ses", tx.seq) as SessionId
      // The child's first turn is queued by the next event: its id follows from that event's seq.
      const childTurnId = tx.id("turn", tx.seq + 1) as TurnId
      tx.emit((meta) =>
        new SubagentStarted({
          sessionId: turn.sessionId,
          turnId: turn.turnId,
          ...meta,
          childSessionId,
          childTurnId,
          agent,
          task,
          toolCallId: call.toolCallId
        }, noValidation)
      )
      queueTurn(tx, childSessionId, task, cause)
      settleSessions(tx)
      return complete(
        tx,
        tx.turn(turn.turnId) ?? turn,
        call,
        success({ sessionId: childSessionId, turnId: childTurnId, agent, status: "started" })
      )
    }
    case "message": {
      const params = required(call.arguments, call.name, ["sessionId", "message"])
      if (Either.isLeft(params)) return complete(tx, turn, call, params.left)
      const [sessionId, message] = params.right
      const child = childOf(tx, parent, sessionId)
      if (child === undefined) return complete(tx, turn, call, noChild(sessionId))
      const turnId = queueTurn(tx, child.sessionId, message, cause)
      settleSessions(tx)
      return complete(tx, tx.turn(turn.turnId) ?? turn, call, success({ sessionId, turnId, status: "message sent" }))
    }
    case "interrupt": {
      const params = required(call.arguments, call.name, ["sessionId"])
      if (Either.isLeft(params)) return complete(tx, turn, call, params.left)
      const [sessionId] = params.right
      const child = childOf(tx, parent, sessionId)
      if (child === undefined) return complete(tx, turn, call, noChild(sessionId))
      cancelSubtree(tx, child.sessionId)
      return complete(tx, tx.turn(turn.turnId) ?? turn, call, success({ sessionId, status: "interrupted" }))
    }
  }
}

/** The call is allowed: run it the way its kind runs. */
const proceed = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, tool: ResolvedTool) => {
  switch (tool._tag) {
    case "client":
      return openCallback(tx, turn, "clientTool", (fields) =>
        new OpenClientToolCall({
          ...fields,
          request: new ClientToolRequest(
            { tool: refOf(tool), toolCallId: call.toolCallId, arguments: call.arguments },
            noValidation
          )
        }, noValidation))
    case "connector": {
      if (tx.session(turn.sessionId)?.connected.includes(tool.source)) {
        return tx.emit((meta) =>
          new ToolExecutionStarted({
            sessionId: turn.sessionId,
            turnId: turn.turnId,
            ...meta,
            toolCallId: call.toolCallId,
            toolId: call.toolId
          }, noValidation)
        )
      }
      // Sign-ins wait as long as approvals.
      return openCallback(tx, turn, "approval", (fields) =>
        new OpenSignIn({
          ...fields,
          requests: [
            new SignInRequest({ id: tool.source, source: tool.source, toolCallId: call.toolCallId }, noValidation)
          ]
        }, noValidation))
    }
    case "builtin":
      return tool.builtin === "wait" ? settleWait(tx, turn, call) : runBuiltin(tx, turn, call, tool.builtin)
  }
}

/** A new call: the permission policy allows it, denies it, or asks (an approval). */
const authorize = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call) => {
  const tool = toolOf(tx, turn, call)
  if (tool === undefined) return complete(tx, turn, call, failure(`There is no tool named ${call.name}.`))
  // Of the subagent tools, only agents.spawn asks: the others act on subagents already approved.
  if (tool._tag === "builtin" && tool.builtin !== "spawn") return proceed(tx, turn, call, tool)
  const agent = tx.session(turn.sessionId)?.agent
  const evaluation = Policy.evaluate(agent?.permissions ?? allowAll, tool.spec.id)
  if (evaluation.decision === "allow") return proceed(tx, turn, call, tool)
  if (evaluation.decision === "deny") {
    return complete(tx, turn, call, failure(`The permission policy denies ${tool.spec.id}; the call was not made.`))
  }
  return openCallback(tx, turn, "approval", (fields) =>
    new OpenApproval({
      ...fields,
      request: new ApprovalRequest({
        tool: refOf(tool),
        toolCallId: call.toolCallId,
        arguments: call.arguments,
        decidedBy: evaluation.decidedBy
      }, noValidation)
    }, noValidation))
}

/** The callback the call waited on closed: go on with its answer, or give the model the reason it did not run. */
const advance = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, record: TreeState.CallbackRecord) => {
  const tool = toolOf(tx, turn, call)
  const callback = record.callback
  const answer = record.resolution === "answered" ? record.answer : undefined
  switch (callback._tag) {
    case "OpenApproval": {
      if (answer?._tag === "AllowApproval" && tool !== undefined) return proceed(tx, turn, call, tool)
      if (answer?._tag === "DenyApproval") {
        const reason = answer.reason === undefined ? "" : `: ${answer.reason}`
        return complete(tx, turn, call, failure(`The user denied the call to ${callback.request.tool.name}${reason}.`))
      }
      return complete(
        tx,
        turn,
        call,
        unanswered(record.resolution, `approval request for ${callback.request.tool.name}`)
      )
    }
    case "OpenClientToolCall":
      return complete(
        tx,
        turn,
        call,
        answer?._tag === "ClientToolResult"
          ? { isFailure: answer.isFailure, result: answer.result }
          : unanswered(record.resolution, `call to the client tool ${callback.request.tool.name}`)
      )
    case "OpenSignIn": {
      const source = callback.requests[0].source
      if (answer?._tag !== "SignInAnswer") {
        return complete(tx, turn, call, unanswered(record.resolution, `sign-in to ${source}`))
      }
      if (tool !== undefined && tx.session(turn.sessionId)?.connected.includes(source)) {
        return proceed(tx, turn, call, tool)
      }
      return complete(
        tx,
        turn,
        call,
        failure(
          `The user denied the sign-in to ${source}, so ${tool?.spec.name ?? call.name} could not run. ` +
            `The ${source} connector stays disconnected until the user signs in.`
        )
      )
    }
  }
}

// =============================================================================
// Settling
// =============================================================================

/** Sessions that are free start their next queued turn. */
const settleSessions = (tx: Tx): boolean => {
  let changed = false
  for (const session of HashMap.values(tx.state.sessions)) {
    if (session.running === undefined && session.queue.length > 0) {
      startTurn(tx, session, session.queue[0])
      changed = true
    }
  }
  return changed
}

/** Moves one running turn's tool calls on; starts its next model step when they all have results. */
const settleTurn = (tx: Tx, turnId: TurnId): boolean => {
  let changed = false
  const initial = tx.turn(turnId)
  if (initial === undefined || initial.status !== "running") return false
  for (const { toolCallId } of initial.calls) {
    const turn = tx.turn(turnId)
    if (turn === undefined || turn.status !== "running") return true
    const call = turn.calls.find((candidate) => candidate.toolCallId === toolCallId)
    if (call === undefined) continue
    if (call.stage._tag === "Started") {
      if (call.toolId === "agents.wait") {
        if (settleWait(tx, turn, call)) changed = true
      } else {
        authorize(tx, turn, call)
        changed = true
      }
    } else if (call.stage._tag === "Callback") {
      const record = TreeState.callback(tx.state, call.stage.callbackId)
      if (record !== undefined && record.resolution !== undefined) {
        advance(tx, turn, call, record)
        changed = true
      }
    }
  }
  const turn = tx.turn(turnId)
  if (
    turn !== undefined && turn.status === "running" && !turn.modelPending && turn.calls.length > 0 &&
    turn.calls.every((call) => call.stage._tag === "Completed")
  ) {
    const limit = tx.session(turn.sessionId)?.agent.maxSteps ?? defaultMaxSteps
    if (turn.steps >= limit) {
      fail(tx, turn, new StepLimitReached({ module: "Engine", method: "modelStep", limit }))
    } else {
      startStep(tx, turn)
    }
    changed = true
  }
  return changed
}

export const settle = (tx: Tx) => {
  // Each pass either changes the state or ends the loop; the bound guards against a bug looping forever.
  for (let pass = 0; pass < 10_000; pass++) {
    let changed = settleSessions(tx)
    for (const turn of TreeState.runningTurns(tx.state)) {
      if (settleTurn(tx, turn.turnId)) changed = true
    }
    if (!changed) break
  }
  const root = TreeState.rootTurn(tx.state)
  if (root !== undefined && tx.state.blockedAt === undefined && TreeState.isBlocked(tx.state)) {
    const callbackIds = tx.state.open
    tx.emit((meta) =>
      new TurnBlocked({ sessionId: root.sessionId, turnId: root.turnId, ...meta, callbackIds }, noValidation)
    )
  }
}

// =============================================================================
// Commands
// =============================================================================

const notOpen = (callbackId: string, description: string) =>
  new CallbackNotOpen({ module: "Turn", method: "answer", callbackId, description })

const validateAnswer = (
  tx: Tx,
  command: Extract<Command, { _tag: "Answer" }>
): Either.Either<TreeState.CallbackRecord, Rejection> => {
  const { answer, callbackId, sessionId, turnId } = command
  const session = tx.session(sessionId)
  if (session === undefined) {
    return Either.left(new SessionNotFound({ module: "Turn", method: "answer", sessionId }))
  }
  const turn = tx.turn(turnId)
  if (turn === undefined || turn.sessionId !== sessionId) {
    return Either.left(new TurnNotFound({ module: "Turn", method: "answer", sessionId, turnId }))
  }
  const record = TreeState.callback(tx.state, callbackId)
  if (record === undefined) return Either.left(notOpen(callbackId, "no such callback"))
  if (record.resolution === "answered") {
    return Either.left(new CallbackAlreadyAnswered({ module: "Turn", method: "answer", callbackId }))
  }
  if (record.resolution !== undefined) return Either.left(notOpen(callbackId, `it was resolved ${record.resolution}`))
  const callback = record.callback
  if (callback.sessionId === sessionId ? callback.turnId !== turnId : sessionId !== tx.state.treeId) {
    return Either.left(notOpen(callbackId, `it belongs to turn ${callback.turnId} of session ${callback.sessionId}`))
  }
  const kind = Either.flatMap(
    Answers.validateSync(callback, answer),
    (): Either.Either<TreeState.CallbackRecord, AnswerMismatch> => {
      if (callback._tag !== "OpenClientToolCall" || answer._tag !== "ClientToolResult") return Either.right(record)
      const spec = session.agent.tools.find((tool) => tool.id === callback.request.tool.id) ??
        tx.session(callback.sessionId)?.agent.tools.find((tool) => tool.id === callback.request.tool.id)
      return Either.map(checkClientToolResult(callback.id, spec?.success, answer), () => record)
    }
  )
  return kind
}

/** An open callback whose deadline has passed. */
const isPastDeadline = (tx: Tx, record: TreeState.CallbackRecord): boolean =>
  record.resolution === undefined && record.callback.expiresAt !== undefined &&
  DateTime.lessThanOrEqualTo(record.callback.expiresAt, tx.now)

/** The turn whose model step a result is for, if that step is still the one in flight. */
const pendingStep = (tx: Tx, command: { readonly turnId: TurnId; readonly messageId: string }) => {
  const turn = tx.turn(command.turnId)
  return turn !== undefined && turn.modelPending && turn.step?.messageId === command.messageId ? turn : undefined
}

const fail = (tx: Tx, turn: TreeState.Turn, error: ParleyError) =>
  endTurn(tx, turn.turnId, new Failed({ sessionId: turn.sessionId, turnId: turn.turnId, error }, true))

const handle = (tx: Tx, command: Command): Either.Either<Reply, Rejection> => {
  switch (command._tag) {
    case "SendMessage": {
      const session = tx.session(command.sessionId)
      if (session === undefined) {
        return Either.left(
          new SessionNotFound({ module: "Session", method: "sendMessage", sessionId: command.sessionId })
        )
      }
      const cursor = tx.seq
      const turnId = queueTurn(tx, command.sessionId, command.input, undefined)
      return Either.right(new TurnRef({ sessionId: command.sessionId, turnId, cursor }, noValidation))
    }
    case "Answer": {
      const record = TreeState.callback(tx.state, command.callbackId)
      // A deadline that passed resolves the callback first, whatever the answer.
      if (record !== undefined && isPastDeadline(tx, record)) {
        resolve(tx, record, "expired")
        return Either.left(notOpen(command.callbackId, "it expired"))
      }
      return Either.map(validateAnswer(tx, command), (valid) => {
        resolve(tx, valid, "answered", command.answer)
        return undefined
      })
    }
    case "Cancel": {
      const session = tx.session(command.sessionId)
      if (session === undefined) {
        return Either.left(new SessionNotFound({ module: "Session", method: "cancel", sessionId: command.sessionId }))
      }
      const members = TreeState.subtree(tx.state, command.sessionId)
      const busy = members.some((member) => member.running !== undefined || member.queue.length > 0)
      const turnId = session.running ?? session.queue[0] ?? session.last?.turnId
      if (busy && turnId !== undefined) {
        tx.emit((meta) => new CancelRequested({ sessionId: command.sessionId, turnId, ...meta }, noValidation))
        cancelSubtree(tx, command.sessionId)
      }
      return Either.right(undefined)
    }
    case "ModelStepDone": {
      const turn = pendingStep(tx, command)
      if (turn === undefined) return Either.right(undefined)
      const tools = toolsOfTurn(tx, turn)
      if (command.text.length > 0 || command.reasoning.length > 0 || command.toolCalls.length === 0) {
        tx.emit((meta) =>
          new MessageCompleted({
            sessionId: turn.sessionId,
            turnId: turn.turnId,
            ...meta,
            messageId: command.messageId,
            text: command.text,
            reasoning: command.reasoning
          }, noValidation)
        )
      }
      for (const call of command.toolCalls) {
        const toolId = tools?.get(call.name)?.spec.id ?? ("client.unknown" as ToolId)
        tx.emit((meta) =>
          new ToolCallStarted({
            sessionId: turn.sessionId,
            turnId: turn.turnId,
            ...meta,
            toolCallId: call.id,
            toolId,
            name: call.name,
            arguments: call.params
          }, noValidation)
        )
      }
      if (command.toolCalls.length === 0) {
        endTurn(
          tx,
          turn.turnId,
          new Completed({ sessionId: turn.sessionId, turnId: turn.turnId, text: command.text }, true)
        )
      }
      return Either.right(undefined)
    }
    case "ModelStepFailed": {
      const turn = pendingStep(tx, command)
      if (turn !== undefined) fail(tx, turn, command.error)
      return Either.right(undefined)
    }
    case "ToolFinished": {
      const turn = tx.turn(command.turnId)
      const call = turn?.calls.find((candidate) => candidate.toolCallId === command.toolCallId)
      if (turn === undefined || call === undefined || call.stage._tag !== "Executing") return Either.right(undefined)
      complete(tx, turn, call, { isFailure: command.isFailure, result: command.result })
      return Either.right(undefined)
    }
    case "WorkFailed": {
      const turn = tx.turn(command.turnId)
      if (turn !== undefined && turn.status === "running") fail(tx, turn, command.error)
      return Either.right(undefined)
    }
    case "Expire": {
      const record = TreeState.callback(tx.state, command.callbackId)
      if (record !== undefined && isPastDeadline(tx, record)) resolve(tx, record, "expired")
      return Either.right(undefined)
    }
    case "Resume": {
      for (const turn of TreeState.runningTurns(tx.state)) {
        // A tool of the runtime that started and has no result may have had its side effect: the model is told it
        // was interrupted, and it is never run twice — unless the tool says running it again is harmless.
        for (const call of turn.calls) {
          if (call.stage._tag !== "Executing") continue
          if (toolOf(tx, turn, call)?.spec.annotations.idempotentHint === true) continue
          complete(
            tx,
            tx.turn(turn.turnId) ?? turn,
            call,
            failure(`The call to ${call.name} was interrupted (the runtime stopped); it may or may not have run.`)
          )
        }
        // A model step without a result was interrupted: its partial text is dropped and the step is issued again.
        if (!turn.modelPending || turn.step === undefined) continue
        const step = turn.step
        tx.emit((meta) =>
          new MessageAborted(
            { sessionId: turn.sessionId, turnId: turn.turnId, ...meta, messageId: step.messageId },
            true
          )
        )
        const current = tx.turn(turn.turnId)
        if (current !== undefined) startStep(tx, current)
      }
      return Either.right(undefined)
    }
    case "Settle":
      return Either.right(undefined)
  }
}

const toolsOfTurn = (tx: Tx, turn: TreeState.Turn) => {
  const agent = tx.session(turn.sessionId)?.agent
  return agent === undefined ? undefined : tx.env.toolsOf(agent)
}

/**
 * Decides a command: the events it appends (with everything the state then calls for) and its reply. A rejection
 * appends nothing — unless a deadline had passed, whose `expired` resolution is appended all the same.
 */
export const decide = (state: TreeState.TreeState, command: Command, now: DateTime.Utc, env: Env): Decision => {
  const tx = new Tx(state, now, env)
  const reply = handle(tx, command)
  if (Either.isLeft(reply) && tx.events.length === 0) return { events: [], state, reply }
  settle(tx)
  return { events: tx.events, state: tx.state, reply }
}
