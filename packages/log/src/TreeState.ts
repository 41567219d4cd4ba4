/**
 * The state of a tree — a root session and every subagent under it — as a pure projection of its log:
 * `evolve(state, event)` applies one event, `fold(header, events)` a whole log. Everything the engine decides from is
 * here (turns and their states, open callbacks, what each tool call waits for, connected sources, subagent links, each
 * session's conversation, built incrementally), so a restarted engine, another process or a client that reads the log
 * derives the same state.
 *
 * The state is an immutable value: `evolve` returns a new state and shares the rest (persistent `HashMap`s), so a
 * reader may keep an old state while the log moves on. Its snapshot codec (a state as JSON text, to load a long tree
 * from) is `Snapshot`.
 *
 * @example
 * ```ts
 * import { AgentSpec, Ids } from "@parley/core"
 * import { TreeState } from "@parley/log"
 * import { DateTime } from "effect"
 *
 * const header = {
 *   treeId: Ids.SessionId.make("ses_example"),
 *   agent: AgentSpec.make({ name: "assistant" }),
 *   createdAt: DateTime.makeUnsafe(0)
 * }
 * const state = TreeState.fold(header, [])
 * console.log(TreeState.isBlocked(state)) // false: nothing runs, nothing waits
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { Answer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { CallbackId, SessionId, ToolId, TurnId } from "@parley/core/Ids"
import type { JsonSchema } from "@parley/core/ToolSpec"
import type { ApprovalGranted, Executor, Reasoning, Resolution, TraceContext, TurnCause } from "@parley/core/TurnEvent"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type { Blocked, Final } from "@parley/core/TurnState"
import * as ArgumentCondition from "@parley/policy/ArgumentCondition"
import type * as DateTime from "effect/DateTime"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as internalAnswer from "./internal/answerSchema.js"
import * as blocked from "./internal/blocked.js"
import { applyEvent } from "./internal/evolve.js"
import { getCallback, getSession, getTurn, newSession } from "./internal/state.js"

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
  /** The turns queued with a client's request id (`TurnQueued.requestId`), by that id: a repeated send finds them. */
  readonly requests: HashMap.HashMap<string, TurnId>
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
  /** The client's id of the answer that won (`CallbackResolved.requestId`): its retries succeed. */
  readonly requestId?: string | undefined
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
// Constructors
// =============================================================================

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
export const session = (state: TreeState, sessionId: SessionId): Session | undefined => getSession(state, sessionId)

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
  getCallback(state, callbackId)

/**
 * The turn the session queued for a send with this request id, if any: a send repeated with it answers this turn.
 *
 * @since 0.1.0
 * @category Utils
 */
export const requested = (state: TreeState, sessionId: SessionId, requestId: string): Turn | undefined => {
  const turnId = HashMap.get(getSession(state, sessionId)?.requests ?? HashMap.empty<string, TurnId>(), requestId)
  return Option.isSome(turnId) ? getTurn(state, turnId.value) : undefined
}

/**
 * The root session's running turn.
 *
 * @since 0.1.0
 * @category Utils
 */
export const rootTurn: (state: TreeState) => Turn | undefined = blocked.rootTurn

/**
 * The sessions of the tree whose turn is running.
 *
 * @since 0.1.0
 * @category Utils
 */
export const runningTurns: (state: TreeState) => ReadonlyArray<Turn> = blocked.runningTurns

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

/**
 * Whether a running turn makes progress on its own. It does not when its model step is done and every tool call that
 * has no result waits: on an open callback, or in `agents.wait` (the subagents' turns count for themselves).
 *
 * @since 0.1.0
 * @category Utils
 */
export const isActive: (state: TreeState, turn: Turn) => boolean = blocked.isActive

/**
 * The tree cannot progress until a callback is answered: a root turn runs, callbacks are open, and no turn of the
 * tree makes progress on its own.
 *
 * @since 0.1.0
 * @category Guards
 */
export const isBlocked: (state: TreeState) => boolean = blocked.isBlocked

/**
 * The open callbacks a turn lists: for a root turn, its own and every subagent's (subagents outlive turns); for a
 * subagent's turn, its own.
 *
 * @since 0.1.0
 * @category Utils
 */
export const openCallbacks: (state: TreeState, turnId: TurnId) => ReadonlyArray<Callback> = blocked.openCallbacks

/**
 * How a turn stands: its final state once ended, `Blocked` while its tree is blocked (root turns), `undefined`
 * while queued or making progress.
 *
 * @since 0.1.0
 * @category Utils
 */
export const turnState: (state: TreeState, turnId: TurnId) => Final | Blocked | undefined = blocked.turnState

/**
 * Whether the subagent session `sessionId` belongs to the part of the tree the root turn `rootTurnId` started (its
 * own callbacks included). A subagent left running by an earlier turn does not, nor do the subagents it starts.
 *
 * @since 0.1.0
 * @category Utils
 */
export const fromRootTurn = (callback: Callback, rootTurnId: TurnId): boolean =>
  (callback.rootTurnId ?? callback.turnId) === rootTurnId

/**
 * The JSON Schema of the answer a callback expects: `AllowApproval | DenyApproval`, a `SignInAnswer`, or a
 * `ClientToolResult` whose success `result` matches the tool's `success` schema (when the tool has one).
 *
 * @since 0.1.0
 * @category Utils
 */
export const answerSchema = (state: TreeState, cb: Callback): JsonSchema =>
  internalAnswer.answerSchema(cb, (sessionId) => session(state, sessionId)?.agent)

/**
 * The grant that decides a call of `toolId` with `args` (its arguments) in `sessionId` without asking, if any: the
 * latest in force whose tool is that id, whose scope covers the session (its own session, or the whole tree) and
 * whose conditions (`when`, a grant scoped to arguments) the arguments meet.
 *
 * @since 0.1.0
 * @category Utils
 */
export const grantFor = (
  state: TreeState,
  sessionId: SessionId,
  toolId: string,
  args: unknown
): ApprovalGranted | undefined => {
  for (let i = state.grants.length - 1; i >= 0; i--) {
    const grant = state.grants[i]
    if (
      grant.toolPattern === toolId && (grant.scope === "tree" || grant.sessionId === sessionId) &&
      ArgumentCondition.holdsAll(grant.when, args)
    ) return grant
  }
  return undefined
}
