/**
 * A tool call's way through the policy and its callbacks: `authorize` (allow, deny or ask), `proceed` (run it the way
 * its kind runs: a client tool's callback, a runtime tool's execution, a connector's sign-in or execution, a
 * builtin), and `advance` once the callback it waited on closed.
 */
import { AllowApproval, DenyApproval } from "@parley/core/Answer"
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
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import { PermissionPolicy } from "@parley/core/Permissions"
import { Grant } from "@parley/core/Principal"
import type { Executor } from "@parley/core/TurnEvent"
import { CallbackOpened, SubagentStarted, ToolExecutionStarted, TurnCause } from "@parley/core/TurnEvent"
import * as TreeState from "@parley/log/TreeState"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as DateTime from "effect/DateTime"
import * as Either from "effect/Either"
import type { ResolvedTool } from "./agentTools.js"
import type { Tx } from "./tx.js"
import {
  cancelSubtree,
  complete,
  failure,
  noValidation,
  queueTurn,
  resolve,
  settleSessions,
  success,
  unanswered
} from "./tx.js"

export const allowAll = new PermissionPolicy({ default: "allow", rules: [] })

// =============================================================================
// Tool calls
// =============================================================================

export const toolOf = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call): ResolvedTool | undefined => {
  const agent = tx.session(turn.sessionId)?.agent
  return agent === undefined ? undefined : tx.env.toolsOf(agent).get(call.name)
}

export const refOf = (tool: ResolvedTool) =>
  new ToolRef({ id: tool.spec.id, name: tool.spec.name, annotations: tool.spec.annotations }, noValidation)

export const openCallback = (
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

export const stringParam = (params: unknown, key: string): string | undefined => {
  const value = typeof params === "object" && params !== null ? (params as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

export const required = (params: unknown, name: string, keys: ReadonlyArray<string>) => {
  const values: Array<string> = []
  for (const key of keys) {
    const value = stringParam(params, key)
    if (value === undefined) return Either.left(failure(`${name} needs a "${key}" string.`))
    values.push(value)
  }
  return Either.right(values)
}

export const childOf = (tx: Tx, parent: TreeState.Session, sessionId: string): TreeState.Session | undefined =>
  parent.children.includes(sessionId as SessionId) ? tx.session(sessionId as SessionId) : undefined

export const noChild = (sessionId: string) =>
  failure(`There is no subagent session ${sessionId} started by this agent.`)

/** The subagents `agents.wait` waits for, or the failure it returns at once. */
export const waitTargets = (tx: Tx, parent: TreeState.Session, params: unknown) => {
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

export const waitResult = (targets: ReadonlyArray<TreeState.Session>) =>
  success(targets.map((child) => ({
    sessionId: child.sessionId,
    agent: child.agent.name,
    state: child.last?._tag ?? "NotStarted",
    ...(child.last?._tag === "Completed" ? { text: child.last.text } : {}),
    ...(child.last?._tag === "Failed" ? { error: child.last.error.message } : {})
  })))

/** `agents.wait` returns once none of its subagents has a turn running or queued. */
export const settleWait = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call): boolean => {
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
export const runBuiltin = (
  tx: Tx,
  turn: TreeState.Turn,
  call: TreeState.Call,
  builtin: "spawn" | "message" | "interrupt"
) => {
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

/**
 * The runtime runs the call: its executor — the engine that owns the tree — records `ToolExecutionStarted` under its
 * lease, and its work runs the call once that is stored. A decision without an executor (an answer from a process that
 * does not own the tree, or runs no work) records nothing: the allowed call waits for the owner, which starts it when it
 * settles the tree.
 */
export const execute = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call) => {
  const executor = tx.executor
  if (executor === undefined) return
  tx.emit((meta) =>
    new ToolExecutionStarted({
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      ...meta,
      toolCallId: call.toolCallId,
      toolId: call.toolId,
      executor
    }, noValidation)
  )
}

/** Whether the call's start was recorded under the executor's lease (the same owner, at the same epoch). */
export const startedBy = (call: TreeState.Call, executor: Executor | undefined): boolean =>
  call.stage._tag === "Executing" && executor !== undefined && call.stage.executor !== undefined &&
  call.stage.executor.owner === executor.owner && call.stage.executor.epoch === executor.epoch

/**
 * The call waits on a sign-in to `source`: before its first call (the connector asks first), or because the
 * connector's server asked for an authorization (its URL and scopes). Sign-ins wait as long as approvals.
 */
export const openSignIn = (
  tx: Tx,
  turn: TreeState.Turn,
  call: TreeState.Call,
  source: string,
  authorization?: { readonly authorizationUrl: string; readonly scopes: ReadonlyArray<string> }
) =>
  openCallback(tx, turn, "approval", (fields) =>
    new OpenSignIn({
      ...fields,
      requests: [
        new SignInRequest({ id: source, source, toolCallId: call.toolCallId, ...authorization }, noValidation)
      ]
    }, noValidation))

/** The call is allowed: run it the way its kind runs. */
export const proceed = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, tool: ResolvedTool) => {
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
    case "runtime":
      return execute(tx, turn, call)
    case "connector": {
      if (!tool.askFirst || tx.session(turn.sessionId)?.connected.includes(tool.source)) return execute(tx, turn, call)
      return openSignIn(tx, turn, call, tool.source)
    }
    case "builtin":
      if (tool.builtin === "wait") return settleWait(tx, turn, call)
      // A spawn starts a subagent: like a tool's start, the tree's owner records it.
      if (tool.builtin === "spawn" && tx.executor === undefined) return
      return runBuiltin(tx, turn, call, tool.builtin)
  }
}

/** A new call: the permission policy allows it, denies it, or asks (an approval). */
export const authorize = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call) => {
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
  openCallback(tx, turn, "approval", (fields) =>
    new OpenApproval({
      ...fields,
      request: new ApprovalRequest({
        tool: refOf(tool),
        toolCallId: call.toolCallId,
        arguments: call.arguments,
        decidedBy: evaluation.decidedBy
      }, noValidation)
    }, noValidation))
  // A grant in force answers at once, in the same append: the approval is on record, answered by the grant.
  const grant = TreeState.grantFor(tx.state, turn.sessionId, tool.spec.id)
  const record = grant === undefined ? undefined : TreeState.callback(tx.state, tx.state.open[tx.state.open.length - 1])
  if (grant === undefined || record === undefined) return
  const answer = grant.decision === "allow"
    ? new AllowApproval({}, noValidation)
    : new DenyApproval({ reason: `a ${grant.scope} grant (${grant.grantId}) denies ${tool.spec.id}` }, noValidation)
  resolve(tx, record, "answered", answer, new Grant({ id: grant.grantId }, noValidation))
}

/** The callback the call waited on closed: go on with its answer, or give the model the reason it did not run. */
export const advance = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, record: TreeState.CallbackRecord) => {
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
      // This answer decides (a source connected before and denied now stays unused: "must reconnect" was refused).
      if (tool !== undefined && answer.connectedIds.includes(callback.requests[0].id)) {
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
