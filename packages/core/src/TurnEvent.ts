/**
 * The events of a tree's log. A root session and every subagent under it share one append-only log; each event names
 * its own `sessionId` and `turnId`, and carries `seq` (per tree, strictly increasing and gap-free among stored events:
 * the cursor for replay) and `at`. A turn is a `Stream` of them, a subagent's view a filter of its tree's log.
 *
 * `MessageDelta`s are streamed to live readers only: the log keeps one `MessageCompleted` per model step (the
 * concatenation of its deltas), so a durable store pays one write per step, not one per token. A delta carries the
 * `seq` of its step's `ModelStepStarted`.
 *
 * The log format is versioned by `schemaVersion`: a store records it beside each event it persists.
 *
 * @example
 * ```ts
 * import { TurnEvent } from "@parley/core"
 * import { Match } from "effect"
 *
 * const show = Match.type<TurnEvent.TurnEvent>().pipe(
 *   Match.tag("CallbackOpened", (e) => `waiting on: ${e.callback.kind}`),
 *   Match.tag("TurnEnded", (e) => e.state._tag),
 *   Match.orElse(() => undefined)
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import {
  MessageAborted,
  MessageCompleted,
  MessageDelta,
  ModelStepStarted,
  TurnQueued,
  TurnStarted
} from "./internal/messageEvents.js"
import {
  ApprovalGranted,
  CallbackOpened,
  CallbackResolved,
  GrantRevoked,
  ToolCallCompleted,
  ToolCallStarted,
  ToolExecutionStarted
} from "./internal/toolEvents.js"
import { CancelRequested, SubagentEnded, SubagentStarted, TurnBlocked, TurnEnded } from "./internal/treeEvents.js"

/**
 * The version of the event schemas (`schemaVersion`) and the upcasting path from older versions (`upcast`).
 *
 * @since 0.1.0
 */
export * from "./internal/eventVersion.js"

/**
 * A turn's start and its model steps: `TurnCause`, `TraceContext`, `TurnQueued`, `TurnStarted`, `ModelStepStarted`,
 * `MessageAborted`, `MessageDelta`, `Reasoning`, `MessageCompleted`.
 *
 * @since 0.1.0
 */
export * from "./internal/messageEvents.js"

/**
 * Tool calls, callbacks and grants: `ToolCallStarted`, `Executor`, `ToolExecutionStarted`, `ToolCallCompleted`,
 * `CallbackOpened`, `Resolution`, `CallbackResolved`, `ApprovalGranted`, `GrantRevoked`.
 *
 * @since 0.1.0
 */
export * from "./internal/toolEvents.js"

/**
 * Subagents, a blocked tree, a cancel and a turn's end: `SubagentStarted`, `SubagentEnded`, `TurnBlocked`,
 * `CancelRequested`, `TurnEnded`.
 *
 * @since 0.1.0
 */
export * from "./internal/treeEvents.js"

/**
 * @since 0.1.0
 * @category Models
 */
export type TurnEvent =
  | TurnQueued
  | TurnStarted
  | ModelStepStarted
  | MessageAborted
  | MessageDelta
  | MessageCompleted
  | ToolCallStarted
  | ToolExecutionStarted
  | ToolCallCompleted
  | CallbackOpened
  | CallbackResolved
  | ApprovalGranted
  | GrantRevoked
  | SubagentStarted
  | SubagentEnded
  | TurnBlocked
  | CancelRequested
  | TurnEnded

/**
 * @since 0.1.0
 * @category Schemas
 */
export const TurnEvent: Schema.Union<
  readonly [
    typeof TurnQueued,
    typeof TurnStarted,
    typeof ModelStepStarted,
    typeof MessageAborted,
    typeof MessageDelta,
    typeof MessageCompleted,
    typeof ToolCallStarted,
    typeof ToolExecutionStarted,
    typeof ToolCallCompleted,
    typeof CallbackOpened,
    typeof CallbackResolved,
    typeof ApprovalGranted,
    typeof GrantRevoked,
    typeof SubagentStarted,
    typeof SubagentEnded,
    typeof TurnBlocked,
    typeof CancelRequested,
    typeof TurnEnded
  ]
> = Schema.Union([
  TurnQueued,
  TurnStarted,
  ModelStepStarted,
  MessageAborted,
  MessageDelta,
  MessageCompleted,
  ToolCallStarted,
  ToolExecutionStarted,
  ToolCallCompleted,
  CallbackOpened,
  CallbackResolved,
  ApprovalGranted,
  GrantRevoked,
  SubagentStarted,
  SubagentEnded,
  TurnBlocked,
  CancelRequested,
  TurnEnded
])

/**
 * An event before the store gives it its `seq` and `at`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Draft = TurnEvent extends infer E ? E extends TurnEvent ? Omit<E, "seq" | "at"> : never : never
