/**
 * The subagent tools as pure changes of the tree: `agents.spawn` starts a child session, `agents.message` queues a turn
 * of one, `agents.interrupt` cancels one, and `agents.wait` returns once its subagents have no turn running or queued.
 */
import type { SessionId, TurnId } from "@parley/core/Ids"
import { SubagentStarted, TurnCause } from "@parley/core/TurnEvent"
import type * as TreeState from "@parley/log/TreeState"
import * as Result from "effect/Result"
import type { Tx } from "./tx.js"
import { cancelSubtree, complete, failure, noValidation, queueTurn, settleSessions, success } from "./tx.js"

export const stringParam = (params: unknown, key: string): string | undefined => {
  const value = typeof params === "object" && params !== null ? (params as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

export const required = (params: unknown, name: string, keys: ReadonlyArray<string>) => {
  const values: Array<string> = []
  for (const key of keys) {
    const value = stringParam(params, key)
    if (value === undefined) return Result.fail(failure(`${name} needs a "${key}" string.`))
    values.push(value)
  }
  return Result.succeed(values)
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
  if (!Array.isArray(ids)) return Result.succeed(parent.children.flatMap((id) => tx.session(id) ?? []))
  const targets: Array<TreeState.Session> = []
  for (const id of ids) {
    if (typeof id !== "string") continue
    const child = childOf(tx, parent, id)
    if (child === undefined) return Result.fail(noChild(id))
    targets.push(child)
  }
  return Result.succeed(targets)
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
  if (Result.isFailure(targets)) {
    complete(tx, turn, call, targets.failure)
    return true
  }
  if (targets.success.some((child) => child.running !== undefined || child.queue.length > 0)) return false
  complete(tx, turn, call, waitResult(targets.success))
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
  const cause = new TurnCause(
    { sessionId: turn.sessionId, turnId: turn.turnId, toolCallId: call.toolCallId },
    noValidation
  )
  switch (builtin) {
    case "spawn": {
      const params = required(call.arguments, call.name, ["agent", "task"])
      if (Result.isFailure(params)) return complete(tx, turn, call, params.failure)
      const [agent, task] = params.success
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
      if (Result.isFailure(params)) return complete(tx, turn, call, params.failure)
      const [sessionId, message] = params.success
      const child = childOf(tx, parent, sessionId)
      if (child === undefined) return complete(tx, turn, call, noChild(sessionId))
      const turnId = queueTurn(tx, child.sessionId, message, cause)
      settleSessions(tx)
      return complete(tx, tx.turn(turn.turnId) ?? turn, call, success({ sessionId, turnId, status: "message sent" }))
    }
    case "interrupt": {
      const params = required(call.arguments, call.name, ["sessionId"])
      if (Result.isFailure(params)) return complete(tx, turn, call, params.failure)
      const [sessionId] = params.success
      const child = childOf(tx, parent, sessionId)
      if (child === undefined) return complete(tx, turn, call, noChild(sessionId))
      cancelSubtree(tx, child.sessionId)
      return complete(tx, tx.turn(turn.turnId) ?? turn, call, success({ sessionId, status: "interrupted" }))
    }
  }
}
