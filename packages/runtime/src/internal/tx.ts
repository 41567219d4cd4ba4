/**
 * The transaction `decide` builds: events appended one by one, each applied to the state at once, and the steps of a
 * turn's life (queue, start, model step, resolve, complete, end, cancel) that every decision composes.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { Answer } from "@parley/core/Answer"
import type { SessionId, TurnId } from "@parley/core/Ids"
import type { ParleyError } from "@parley/core/ParleyError"
import type { Principal } from "@parley/core/Principal"
import type { Executor, Resolution, TraceContext, TurnCause, TurnEvent } from "@parley/core/TurnEvent"
import {
  CallbackResolved,
  ModelStepStarted,
  SubagentEnded,
  ToolCallCompleted,
  TurnEnded,
  TurnQueued,
  TurnStarted
} from "@parley/core/TurnEvent"
import type { Final } from "@parley/core/TurnState"
import { Cancelled, Failed } from "@parley/core/TurnState"
import * as TreeState from "@parley/log/TreeState"
import type * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import type * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import type { ResolvedTool } from "./agentTools.js"

/** What decisions need to know beyond the log: the tools of an agent. */
export interface Env {
  readonly toolsOf: (agent: AgentSpec) => ReadonlyMap<string, ResolvedTool>
}

// =============================================================================
// Ids: minted from the decision's seed
// =============================================================================

/**
 * The secret a decision mints its ids from: random bytes the engine draws for each decision (`freshSeed`), never
 * recorded (tests give a fixed one). Like `now`, it comes from outside, so `decide` stays a function of its inputs.
 */
export type Seed = Uint8Array

/** A new seed: 128 bits from `crypto`. */
export const freshSeed: Effect.Effect<Seed> = Effect.sync(() => Crypto.randomBytes(16))

/** The prefixes of the ids decisions mint: turns, callbacks, subagents' sessions, grants. */
export type IdPrefix = "turn" | "cb" | "ses" | "grant"

/**
 * The id of the `prefix` thing the event at `seq` creates: `prefix_` and 20 hex digits (80 bits) of
 * HMAC-SHA-256(seed, `prefix_seq`). Whoever sees ids cannot tell the next one (nor the tree's id, nor a seq) without
 * the seed; an id is minted once, in the event that creates it, and read from the log ever after. Within a decision it
 * is unique: an event creates at most one thing of each prefix. Across decisions (and trees) the seeds differ.
 */
export const mint = (seed: Seed, prefix: IdPrefix, seq: number): string =>
  `${prefix}_${Crypto.createHmac("sha256", seed).update(`${prefix}_${seq}`).digest("hex").slice(0, 20)}`

// =============================================================================
// The transaction: events appended one by one, each applied to the state at once
// =============================================================================

export class Tx {
  readonly events: Array<TurnEvent> = []
  /**
   * @param executor The lease under which the deciding engine runs the tree's tools, when it does (it owns the tree and
   *   has resumed it). Without one, a decision records no tool's start: an allowed call waits for the owner.
   */
  constructor(
    public state: TreeState.TreeState,
    readonly now: DateTime.Utc,
    readonly seed: Seed,
    readonly env: Env,
    readonly executor: Executor | undefined
  ) {}

  get seq(): number {
    return this.state.nextSeq
  }

  emit<E extends TurnEvent>(make: (meta: { readonly seq: number; readonly at: DateTime.Utc }) => E): E {
    const event = make({ seq: this.state.nextSeq, at: this.now })
    this.state = TreeState.evolve(this.state, event)
    this.events.push(event)
    return event
  }

  /** The id of the `prefix` thing the event at `seq` creates, minted from this decision's seed. */
  id(prefix: IdPrefix, seq: number): string {
    return mint(this.seed, prefix, seq)
  }

  session(sessionId: SessionId): TreeState.Session | undefined {
    return TreeState.session(this.state, sessionId)
  }

  turn(turnId: TurnId): TreeState.Turn | undefined {
    return TreeState.turn(this.state, turnId)
  }
}

/** The events `decide` makes are well-formed by construction: their checks are not run again. */
export const noValidation: Schema.MakeOptions = { disableChecks: true }

export interface ToolResult {
  readonly isFailure: boolean
  readonly result: unknown
}

export const failure = (result: string): ToolResult => ({ isFailure: true, result })
export const success = (result: unknown): ToolResult => ({ isFailure: false, result })

export const unanswered = (resolution: Resolution | undefined, what: string): ToolResult => {
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

export const queueTurn = (
  tx: Tx,
  sessionId: SessionId,
  input: string,
  cause: TurnCause | undefined,
  trace?: TraceContext | undefined,
  requestId?: string | undefined
): TurnId => {
  const turnId = tx.id("turn", tx.seq) as TurnId
  tx.emit((meta) => new TurnQueued({ sessionId, turnId, ...meta, input, cause, trace, requestId }, noValidation))
  return turnId
}

export const startStep = (tx: Tx, turn: TreeState.Turn) => {
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

export const startTurn = (tx: Tx, session: TreeState.Session, turnId: TurnId) => {
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

export const resolve = (
  tx: Tx,
  record: TreeState.CallbackRecord,
  resolution: Resolution,
  answer?: Answer,
  answeredBy?: Principal,
  requestId?: string
) => {
  const callback = record.callback
  tx.emit((meta) =>
    new CallbackResolved({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      ...meta,
      callbackId: callback.id,
      resolution,
      answer,
      answeredBy,
      requestId
    }, noValidation)
  )
}

export const complete = (tx: Tx, turn: TreeState.Turn, call: TreeState.Call, result: ToolResult) => {
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
export const endTurn = (tx: Tx, turnId: TurnId, final: Final) => {
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
export const cancelSubtree = (tx: Tx, sessionId: SessionId) => {
  const members = TreeState.subtree(tx.state, sessionId)
  for (const member of [...members].reverse()) {
    const current = tx.session(member.sessionId)
    if (current === undefined) continue
    const turnIds = [...(current.running === undefined ? [] : [current.running]), ...current.queue]
    for (const turnId of turnIds) {
      endTurn(tx, turnId, new Cancelled({ sessionId: member.sessionId, turnId }, noValidation))
    }
  }
}

/** Sessions that are free start their next queued turn. */
export const settleSessions = (tx: Tx): boolean => {
  let changed = false
  for (const session of HashMap.values(tx.state.sessions)) {
    if (session.running === undefined && session.queue.length > 0) {
      startTurn(tx, session, session.queue[0])
      changed = true
    }
  }
  return changed
}

export const fail = (tx: Tx, turn: TreeState.Turn, error: ParleyError) =>
  endTurn(tx, turn.turnId, new Failed({ sessionId: turn.sessionId, turnId: turn.turnId, error }, noValidation))
