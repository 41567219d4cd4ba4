import type * as LanguageModel from "@effect/ai/LanguageModel"
import type { Answer } from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type { ToolSpec } from "@parley/core/ToolSpec"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type { Final } from "@parley/core/TurnState"
import type * as Deferred from "effect/Deferred"
import type * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type { Connector } from "../Connectors.js"
import type { StoredSession } from "../SessionStore.js"

/** How a callback closed, as its waiting fiber sees it. */
export type Outcome =
  | { readonly _tag: "answered"; readonly answer: Answer }
  | { readonly _tag: "expired" }
  | { readonly _tag: "cancelled" }
  | { readonly _tag: "turn_ended" }

/** The in-memory side of a session: its append lock and what is derived from its log. */
export interface SessionRuntime {
  readonly session: StoredSession
  readonly lock: Effect.Semaphore
  readonly turnLock: Effect.Semaphore
  nextSeq: number
  /** Connector sources the user connected in this session (derived from answered sign-ins). */
  readonly connected: Set<string>
  /** The tree the session belongs to: its root session's. */
  readonly tree: Tree
  /** The session's turns that have not ended yet (the first one runs, the others wait for it). */
  readonly turns: Array<RunningTurn>
  /** Subagent sessions this session started. */
  readonly children: Array<SessionRuntime>
  /** How the session's last turn ended. */
  last: Final | undefined
}

export interface RunningTurn {
  readonly turnId: TurnId
  /** Completed when the turn ends, with its final state. */
  readonly done: Deferred.Deferred<Final>
  /** Called when the turn ends, before `done` completes (a waiter counts as running again from that moment). */
  readonly onEnd: Array<() => void>
  fiber: Fiber.RuntimeFiber<void> | undefined
}

/**
 * A root session and every subagent session under it. Subagents outlive turns, so the tree belongs to the root
 * session, and its callbacks are listed by whichever root turn is running (`currentTurnId`). `active` counts the
 * fibers of the tree that are not waiting on a callback: when it drops to 0 with callbacks open during a root turn,
 * the tree is blocked.
 */
export interface Tree {
  root: SessionRuntime
  currentTurnId: TurnId | undefined
  active: number
  readonly open: Map<CallbackId, PendingCallback>
}

export interface PendingCallback {
  readonly callback: Callback
  readonly session: SessionRuntime
  readonly tree: Tree
  readonly deferred: Deferred.Deferred<Outcome>
  /** The JSON Schema a client tool's success value must match. */
  readonly success: ToolSpec["success"]
  /** Whether the fiber that opened it still waits (it then does not count as running in the tree). */
  waiting: boolean
}

/** A tool as the turn resolves it from the model's tool name. */
export type ResolvedTool =
  | { readonly _tag: "client"; readonly spec: ToolSpec }
  | { readonly _tag: "builtin"; readonly spec: ToolSpec; readonly builtin: "spawn" | "message" | "wait" | "interrupt" }
  | {
    readonly _tag: "connector"
    readonly spec: ToolSpec
    readonly connector: Connector
    readonly run: (args: unknown) => Effect.Effect<unknown, string>
  }

/** What the `agents.*` builtins do, provided by the engine. Failures are messages for the model. */
export interface Subagents {
  readonly spawn: (
    parent: SessionRuntime,
    parentTurnId: TurnId,
    agent: string,
    task: string
  ) => Effect.Effect<unknown, string>
  readonly message: (parent: SessionRuntime, sessionId: string, message: string) => Effect.Effect<unknown, string>
  readonly wait: (
    parent: SessionRuntime,
    sessionIds: ReadonlyArray<string> | undefined
  ) => Effect.Effect<unknown, string>
  readonly interrupt: (parent: SessionRuntime, sessionId: string) => Effect.Effect<unknown, string>
}

/** Everything one turn's loop needs. */
export interface TurnContext {
  readonly session: SessionRuntime
  readonly turnId: TurnId
  readonly tree: Tree
  readonly model: LanguageModel.Service
  /** Tools by the name the model sees. */
  readonly tools: ReadonlyMap<string, ResolvedTool>
  readonly subagents: Subagents
}

export type Draft = (meta: { readonly seq: number; readonly at: TurnEvent["at"] }) => TurnEvent

export type { SessionId }
