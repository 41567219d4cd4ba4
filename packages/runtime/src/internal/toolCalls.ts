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
import type { CallbackId, SessionId, ToolId, TurnId } from "@parley/core/Ids"
import { PermissionPolicy } from "@parley/core/Permissions"
import { Grant } from "@parley/core/Principal"
import type { Executor } from "@parley/core/TurnEvent"
import { CallbackOpened, ToolCallStarted, ToolExecutionStarted } from "@parley/core/TurnEvent"
import * as TreeState from "@parley/log/TreeState"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as DateTime from "effect/DateTime"
import type { ResolvedTool } from "./agentTools.js"
import { runBuiltin, settleWait } from "./subagentTools.js"
import type { Tx } from "./tx.js"
import { complete, failure, noValidation, resolve, unanswered } from "./tx.js"

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

/**
 * What the session's permission policy says about a call of `tool` with `args` (a rule's conditions are on them);
 * none for the subagent tools it does not cover (of them, only agents.spawn asks: the others act on subagents
 * already approved).
 */
export const policyFor = (
  tx: Tx,
  sessionId: SessionId,
  tool: ResolvedTool,
  args: unknown
): Policy.Evaluation | undefined => {
  if (tool._tag === "builtin" && tool.builtin !== "spawn") return undefined
  return Policy.evaluate(tx.session(sessionId)?.agent.permissions ?? allowAll, tool.spec.id, args)
}

/**
 * The model asked for a call (`ToolCallStarted`). The policy's verdict is recorded with it when the policy decides
 * alone (`decidedBy`): `authorize` acts on that verdict when this decision settles.
 */
export const startCall = (
  tx: Tx,
  turn: TreeState.Turn,
  tool: ResolvedTool | undefined,
  call: { readonly id: string; readonly name: string; readonly params: unknown }
) => {
  const evaluation = tool === undefined ? undefined : policyFor(tx, turn.sessionId, tool, call.params)
  const decidedBy = evaluation === undefined || evaluation.decision === "ask" ? undefined : Policy.principal(evaluation)
  tx.emit((meta) =>
    new ToolCallStarted({
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      ...meta,
      toolCallId: call.id,
      toolId: tool?.spec.id ?? ("client.unknown" as ToolId),
      name: call.name,
      arguments: call.params,
      ...(decidedBy === undefined ? {} : { decidedBy })
    }, noValidation)
  )
}

/**
 * A new call: the permission policy allows it, denies it, or asks (an approval). A policy that allows or denies has
 * said so on the call's `ToolCallStarted` (`decidedBy`), appended in the same decision.
 */
export const authorize = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call) => {
  const tool = toolOf(tx, turn, call)
  if (tool === undefined) return complete(tx, turn, call, failure(`There is no tool named ${call.name}.`))
  const evaluation = policyFor(tx, turn.sessionId, tool, call.arguments)
  if (evaluation === undefined || evaluation.decision === "allow") return proceed(tx, turn, call, tool)
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
        decidedBy: evaluation.decidedBy,
        ...(evaluation.decidedBy._tag === "RuleMatched" && evaluation.decidedBy.rule.approvers !== undefined
          ? { approvers: evaluation.decidedBy.rule.approvers }
          : {})
      }, noValidation)
    }, noValidation))
  // A grant in force (for these arguments, when it is scoped to some) answers at once, in the same append: the
  // approval is on record, answered by the grant.
  const grant = TreeState.grantFor(tx.state, turn.sessionId, tool.spec.id, call.arguments)
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
