/** Whether a tree is blocked on its callbacks, and what its turns report (`TreeState.isBlocked`, `turnState`, …). */
import type { Callback } from "@parley/core/Callback"
import type { TurnId } from "@parley/core/Ids"
import { Blocked } from "@parley/core/TurnState"
import type { Final } from "@parley/core/TurnState"
import * as HashMap from "effect/HashMap"
import type { Call, TreeState, Turn } from "../TreeState.js"
import { getCallback, getSession, getTurn } from "./state.js"

export const rootTurn = (state: TreeState): Turn | undefined => {
  const running = getSession(state, state.treeId)?.running
  return running === undefined ? undefined : getTurn(state, running)
}

export const runningTurns = (state: TreeState): ReadonlyArray<Turn> => {
  const turns: Array<Turn> = []
  for (const member of HashMap.values(state.sessions)) {
    const running = member.running === undefined ? undefined : getTurn(state, member.running)
    if (running !== undefined) turns.push(running)
  }
  return turns
}

const waits = (state: TreeState, call: Call): boolean =>
  call.stage._tag === "Callback"
    ? getCallback(state, call.stage.callbackId)?.resolution === undefined
    : call.stage._tag === "Started" && call.toolId === "agents.wait"

export const isActive = (state: TreeState, turn: Turn): boolean =>
  turn.status === "running" &&
  !(!turn.modelPending && turn.calls.some((call) => call.stage._tag !== "Completed") &&
    turn.calls.every((call) => call.stage._tag === "Completed" || waits(state, call)))

export const isBlocked = (state: TreeState): boolean =>
  state.open.length > 0 && rootTurn(state) !== undefined &&
  !runningTurns(state).some((running) => isActive(state, running))

export const openCallbacks = (state: TreeState, turnId: TurnId): ReadonlyArray<Callback> => {
  const target = getTurn(state, turnId)
  if (target === undefined) return []
  const isRoot = target.sessionId === state.treeId
  const callbacks: Array<Callback> = []
  for (const id of state.open) {
    const record = getCallback(state, id)
    if (record === undefined) continue
    const cb = record.callback
    const listed = cb.sessionId === target.sessionId ? cb.turnId === turnId : isRoot
    if (listed) callbacks.push(cb)
  }
  return callbacks
}

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
  }, { disableChecks: true })
}
