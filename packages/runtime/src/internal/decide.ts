/**
 * `decide(state, command, now, seed, env)`: the engine's pure decision. It returns the events a command appends to the tree's
 * log (their `seq`s continue the state's) and the command's reply, or a typed rejection that appends nothing. All
 * answer validation lives here.
 *
 * After the command's own events, `settle` applies every transition the state calls for without outside input: a
 * queued turn starts when its session is free, a tool call goes through the policy, an answered callback moves its
 * tool call on, a step whose calls all have results calls the model again, `agents.wait` returns when its subagents
 * are done, and a tree that cannot progress reports `TurnBlocked`. The same transitions apply to events appended by
 * anyone (an answer from another process), so the engine only has to settle after reading them.
 *
 * Ids (turns, callbacks, subagents' sessions, grants) are minted from the decision's `seed` — random bytes the engine
 * draws, never recorded — and the `seq` of the event that creates them: a decision is a function of
 * its inputs, and no id tells another. They are read from the log ever after, never derived again.
 */
import { defaultMaxSteps } from "@parley/core/AgentSpec"
import type { Answer } from "@parley/core/Answer"
import * as Answers from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { TurnId } from "@parley/core/Ids"
import {
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  NotAllowedToAnswer,
  SessionNotFound,
  StepLimitReached,
  TurnNotFound
} from "@parley/core/ParleyError"
import type { AnswerMismatch } from "@parley/core/ParleyError"
import { Approvers } from "@parley/core/Permissions"
import type { Principal } from "@parley/core/Principal"
import * as Principals from "@parley/core/Principal"
import { Client } from "@parley/core/Principal"
import { TurnRef } from "@parley/core/Transport"
import type { Executor } from "@parley/core/TurnEvent"
import {
  ApprovalGranted,
  CancelRequested,
  GrantRevoked,
  MessageAborted,
  MessageCompleted,
  TurnBlocked
} from "@parley/core/TurnEvent"
import { Completed } from "@parley/core/TurnState"
import * as TreeState from "@parley/log/TreeState"
import * as DateTime from "effect/DateTime"
import * as Result from "effect/Result"
import { checkClientToolResult, checkEdit, checkRememberWhen } from "./jsonSchema.js"
import { settleWait } from "./subagentTools.js"
import { advance, authorize, execute, openSignIn, startCall, startedBy, toolOf } from "./toolCalls.js"
import type { Env, Seed } from "./tx.js"
import {
  cancelSubtree,
  complete,
  endTurn,
  fail,
  failure,
  noValidation,
  queueTurn,
  resolve,
  settleSessions,
  startStep,
  Tx
} from "./tx.js"

export type { Command, Decision, Env, ModelToolCall, Rejection, Reply } from "./commands.js"

import type { Command, Decision, Rejection, Reply } from "./commands.js"

// =============================================================================
// Settling
// =============================================================================
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
    // A call moves on when this decision may move it; an allowed call whose start only an executor records stays.
    const before = tx.events.length
    if (call.stage._tag === "Started") {
      if (call.toolId === "agents.wait") settleWait(tx, turn, call)
      else authorize(tx, turn, call)
    } else if (call.stage._tag === "Callback") {
      const record = TreeState.callback(tx.state, call.stage.callbackId)
      if (record !== undefined && record.resolution !== undefined) advance(tx, turn, call, record)
    }
    if (tx.events.length !== before) changed = true
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

/** An answer checked: the record to resolve, `"repeated"` (a retry of the winner's request id), or why it is refused. */
const validateAnswer = (
  tx: Tx,
  command: Extract<Command, { _tag: "Answer" }>
): Result.Result<TreeState.CallbackRecord | "repeated", Rejection> => {
  const { answer, callbackId, sessionId, turnId } = command
  const session = tx.session(sessionId)
  if (session === undefined) {
    return Result.fail(new SessionNotFound({ module: "Turn", method: "answer", sessionId }))
  }
  const turn = tx.turn(turnId)
  if (turn === undefined || turn.sessionId !== sessionId) {
    return Result.fail(new TurnNotFound({ module: "Turn", method: "answer", sessionId, turnId }))
  }
  const record = TreeState.callback(tx.state, callbackId)
  if (record === undefined) return Result.fail(notOpen(callbackId, "no such callback"))
  if (record.resolution === "answered") {
    if (command.requestId !== undefined && record.requestId === command.requestId) return Result.succeed("repeated")
    return Result.fail(
      new CallbackAlreadyAnswered({ module: "Turn", method: "answer", callbackId, answer: record.answer })
    )
  }
  if (record.resolution !== undefined) return Result.fail(notOpen(callbackId, `it was resolved ${record.resolution}`))
  const callback = record.callback
  if (callback.sessionId === sessionId ? callback.turnId !== turnId : sessionId !== tx.state.treeId) {
    return Result.fail(notOpen(callbackId, `it belongs to turn ${callback.turnId} of session ${callback.sessionId}`))
  }
  // Who may answer comes before what the answer says: a principal the asking rule does not name changes nothing.
  if (callback._tag === "OpenApproval" && !Principals.mayAnswer(command.answeredBy, callback.request.approvers)) {
    return Result.fail(
      new NotAllowedToAnswer({
        module: "Turn",
        method: "answer",
        callbackId,
        principal: command.answeredBy === undefined ? "an anonymous caller" : Principals.describe(command.answeredBy),
        approvers: callback.request.approvers ?? new Approvers({})
      })
    )
  }
  const kind = Result.flatMap(
    Answers.validateSync(callback, answer),
    (): Result.Result<TreeState.CallbackRecord | "repeated", AnswerMismatch> => {
      if (
        callback._tag === "OpenApproval" && (answer._tag === "AllowApproval" || answer._tag === "DenyApproval") &&
        answer.rememberWhen !== undefined
      ) {
        const agent = tx.session(callback.sessionId)?.agent
        const tool = agent === undefined ? undefined : tx.env.toolsOf(agent).get(callback.request.tool.name)
        const scoped = checkRememberWhen(callback, tool?.spec.parameters, answer.rememberWhen)
        if (Result.isFailure(scoped)) return Result.fail(scoped.failure)
      }
      if (callback._tag === "OpenApproval" && answer._tag === "AllowApproval" && answer.arguments !== undefined) {
        const agent = tx.session(callback.sessionId)?.agent
        const tool = agent === undefined ? undefined : tx.env.toolsOf(agent).get(callback.request.tool.name)
        return Result.map(checkEdit(callback, tool?.spec.parameters, answer.arguments), () => record)
      }
      if (callback._tag !== "OpenClientToolCall" || answer._tag !== "ClientToolResult") return Result.succeed(record)
      // The tool of the session whose callback it is (a subagent's tool may share its id with the root's).
      const spec = tx.session(callback.sessionId)?.agent.tools.find((tool) => tool.id === callback.request.tool.id) ??
        session.agent.tools.find((tool) => tool.id === callback.request.tool.id)
      return Result.map(checkClientToolResult(callback.id, spec?.success, answer), () => record)
    }
  )
  return kind
}

/** An open callback whose deadline has passed. */
const isPastDeadline = (tx: Tx, record: TreeState.CallbackRecord): boolean =>
  record.resolution === undefined && record.callback.expiresAt !== undefined &&
  DateTime.isLessThanOrEqualTo(record.callback.expiresAt, tx.now)

/** The turn whose model step a result is for, if that step is still the one in flight. */
const pendingStep = (tx: Tx, command: { readonly turnId: TurnId; readonly messageId: string }) => {
  const turn = tx.turn(command.turnId)
  return turn !== undefined && turn.modelPending && turn.step?.messageId === command.messageId ? turn : undefined
}
/**
 * An approval answered with `remember` becomes a grant of its tool id, for its session or its whole tree; with
 * `rememberWhen`, only for the calls whose arguments meet its conditions.
 */
const remember = (tx: Tx, callback: Callback, answer: Answer, answeredBy: Principal | undefined) => {
  if (callback._tag !== "OpenApproval") return
  if (answer._tag !== "AllowApproval" && answer._tag !== "DenyApproval") return
  const scope = answer.remember
  if (scope === undefined) return
  tx.emit((meta) =>
    new ApprovalGranted({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      ...meta,
      grantId: tx.id("grant", meta.seq),
      toolPattern: callback.request.tool.id,
      decision: answer._tag === "AllowApproval" ? "allow" : "deny",
      scope,
      ...(answer.rememberWhen === undefined || answer.rememberWhen.length === 0 ? {} : { when: answer.rememberWhen }),
      grantedBy: answeredBy ?? new Client({}),
      callbackId: callback.id
    }, noValidation)
  )
}

const handle = (tx: Tx, command: Command): Result.Result<Reply, Rejection> => {
  switch (command._tag) {
    case "SendMessage": {
      const session = tx.session(command.sessionId)
      if (session === undefined) {
        return Result.fail(
          new SessionNotFound({ module: "Session", method: "sendMessage", sessionId: command.sessionId })
        )
      }
      // A send repeated with its request id (a retry): the turn the first one queued, and nothing appended.
      const repeated = command.requestId === undefined ? undefined : TreeState.requested(
        tx.state,
        command.sessionId,
        command.requestId
      )
      if (repeated !== undefined) {
        return Result.succeed(
          new TurnRef({ sessionId: command.sessionId, turnId: repeated.turnId, cursor: repeated.cursor }, noValidation)
        )
      }
      const cursor = tx.seq
      const turnId = queueTurn(tx, command.sessionId, command.input, undefined, command.trace, command.requestId)
      return Result.succeed(new TurnRef({ sessionId: command.sessionId, turnId, cursor }, noValidation))
    }
    case "Answer": {
      const record = TreeState.callback(tx.state, command.callbackId)
      // A deadline that passed resolves the callback first, whatever the answer.
      if (record !== undefined && isPastDeadline(tx, record)) {
        resolve(tx, record, "expired")
        return Result.fail(notOpen(command.callbackId, "it expired"))
      }
      return Result.map(validateAnswer(tx, command), (valid) => {
        if (valid === "repeated") return undefined
        resolve(tx, valid, "answered", command.answer, command.answeredBy, command.requestId)
        remember(tx, valid.callback, command.answer, command.answeredBy)
        return undefined
      })
    }
    case "RevokeGrant": {
      const grant = tx.state.grants.find((candidate) => candidate.grantId === command.grantId)
      const members = TreeState.subtree(tx.state, tx.state.treeId).map((member) => member.sessionId)
      if (grant === undefined || (command.sessionId !== grant.sessionId && command.sessionId !== tx.state.treeId)) {
        return Result.fail(
          new GrantNotFound({
            module: "Session",
            method: "revokeGrant",
            sessionId: command.sessionId,
            grantId: command.grantId,
            ...(members.includes(command.sessionId) ? {} : { description: "no such session in this tree" })
          })
        )
      }
      tx.emit((meta) =>
        new GrantRevoked({
          sessionId: grant.sessionId,
          turnId: grant.turnId,
          ...meta,
          grantId: grant.grantId,
          revokedBy: command.revokedBy
        }, noValidation)
      )
      return Result.succeed(undefined)
    }
    case "Cancel": {
      const session = tx.session(command.sessionId)
      if (session === undefined) {
        return Result.fail(new SessionNotFound({ module: "Session", method: "cancel", sessionId: command.sessionId }))
      }
      const members = TreeState.subtree(tx.state, command.sessionId)
      const busy = members.some((member) => member.running !== undefined || member.queue.length > 0)
      const turnId = session.running ?? session.queue[0] ?? session.last?.turnId
      if (busy && turnId !== undefined) {
        tx.emit((meta) => new CancelRequested({ sessionId: command.sessionId, turnId, ...meta }, noValidation))
        cancelSubtree(tx, command.sessionId)
      }
      return Result.succeed(undefined)
    }
    case "ModelStepDone": {
      const turn = pendingStep(tx, command)
      if (turn === undefined) return Result.succeed(undefined)
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
      for (const call of command.toolCalls) startCall(tx, turn, tools?.get(call.name), call)
      if (command.toolCalls.length === 0) {
        endTurn(
          tx,
          turn.turnId,
          new Completed({ sessionId: turn.sessionId, turnId: turn.turnId, text: command.text }, noValidation)
        )
      }
      return Result.succeed(undefined)
    }
    case "ModelStepFailed": {
      const turn = pendingStep(tx, command)
      if (turn !== undefined) fail(tx, turn, command.error)
      return Result.succeed(undefined)
    }
    case "ToolFinished": {
      const turn = tx.turn(command.turnId)
      const call = turn?.calls.find((candidate) => candidate.toolCallId === command.toolCallId)
      if (turn === undefined || call === undefined || call.stage._tag !== "Executing") return Result.succeed(undefined)
      complete(tx, turn, call, { isFailure: command.isFailure, result: command.result })
      return Result.succeed(undefined)
    }
    case "ToolNeedsSignIn": {
      const turn = tx.turn(command.turnId)
      const call = turn?.calls.find((candidate) => candidate.toolCallId === command.toolCallId)
      if (turn === undefined || call === undefined || call.stage._tag !== "Executing") return Result.succeed(undefined)
      openSignIn(tx, turn, call, command.source, { authorizationUrl: command.authorizationUrl, scopes: command.scopes })
      return Result.succeed(undefined)
    }
    case "WorkFailed": {
      const turn = tx.turn(command.turnId)
      if (turn !== undefined && turn.status === "running") fail(tx, turn, command.error)
      return Result.succeed(undefined)
    }
    case "Expire": {
      const record = TreeState.callback(tx.state, command.callbackId)
      if (record !== undefined && isPastDeadline(tx, record)) resolve(tx, record, "expired")
      return Result.succeed(undefined)
    }
    case "Resume": {
      for (const turn of TreeState.runningTurns(tx.state)) {
        // A tool of the runtime that another owner (or this one at another epoch) started and that has no result may
        // have had its side effect: the model is told it was interrupted, and it is never run twice — unless the tool
        // says running it again is harmless: then this executor starts it again, under its own lease.
        for (const call of turn.calls) {
          if (call.stage._tag !== "Executing" || startedBy(call, tx.executor)) continue
          if (toolOf(tx, turn, call)?.spec.annotations.idempotentHint === true) {
            execute(tx, tx.turn(turn.turnId) ?? turn, call)
            continue
          }
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
            noValidation
          )
        )
        const current = tx.turn(turn.turnId)
        if (current !== undefined) startStep(tx, current)
      }
      return Result.succeed(undefined)
    }
    case "Settle":
      return Result.succeed(undefined)
  }
}

const toolsOfTurn = (tx: Tx, turn: TreeState.Turn) => {
  const agent = tx.session(turn.sessionId)?.agent
  return agent === undefined ? undefined : tx.env.toolsOf(agent)
}

/**
 * Decides a command: the events it appends (with everything the state then calls for) and its reply. A rejection
 * appends nothing — unless a deadline had passed, whose `expired` resolution is appended all the same.
 *
 * `now` and `seed` are what the decision takes from outside besides its command: the time, and the secret its ids are
 * minted from (`freshSeed`; the engine draws one for each attempt at a commit, whose decisions mint at seqs of their
 * own; a decision made again after a lost append race mints other ids, which is fine: only what is appended counts). `executor` is the lease of the engine that decides, when it owns
 * the tree and runs its work: only then does the decision record a tool's start (or a subagent's spawn). An answer
 * decided elsewhere records the decision alone.
 */
export const decide = (
  state: TreeState.TreeState,
  command: Command,
  now: DateTime.Utc,
  seed: Seed,
  env: Env,
  executor?: Executor
): Decision => {
  const tx = new Tx(state, now, seed, env, executor)
  const reply = handle(tx, command)
  if (Result.isFailure(reply) && tx.events.length === 0) return { events: [], state, reply }
  settle(tx)
  return { events: tx.events, state: tx.state, reply }
}
