/**
 * The events of a session's log. A turn is a `Stream` of them; each carries `sessionId`, `turnId`, `seq` (per
 * session, strictly increasing and gap-free: the cursor for replay) and `at`.
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
import { Answer } from "./Answer.js"
import { Callback } from "./Callback.js"
import { CallbackId, SessionId, ToolId, TurnId } from "./Ids.js"
import { Final } from "./TurnState.js"

const common = {
  sessionId: SessionId,
  turnId: TurnId,
  seq: Schema.NonNegativeInt,
  at: Schema.DateTimeUtc
}

/**
 * A turn started with the user's input.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnStarted extends Schema.TaggedClass<TurnStarted>("@parley/core/TurnEvent/TurnStarted")("TurnStarted", {
  ...common,
  input: Schema.String
}) {}

/**
 * A piece of the assistant's text, as the model streams it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class MessageDelta
  extends Schema.TaggedClass<MessageDelta>("@parley/core/TurnEvent/MessageDelta")("MessageDelta", {
    ...common,
    messageId: Schema.String,
    delta: Schema.String
  })
{}

/**
 * The assistant's whole message of one model step.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class MessageCompleted
  extends Schema.TaggedClass<MessageCompleted>("@parley/core/TurnEvent/MessageCompleted")("MessageCompleted", {
    ...common,
    messageId: Schema.String,
    text: Schema.String
  })
{}

/**
 * The model asked for a tool call.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolCallStarted
  extends Schema.TaggedClass<ToolCallStarted>("@parley/core/TurnEvent/ToolCallStarted")("ToolCallStarted", {
    ...common,
    toolCallId: Schema.String,
    toolId: ToolId,
    name: Schema.String,
    arguments: Schema.Unknown
  })
{}

/**
 * A tool call has its result (a failure: denied, expired, a tool error, …).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolCallCompleted
  extends Schema.TaggedClass<ToolCallCompleted>("@parley/core/TurnEvent/ToolCallCompleted")("ToolCallCompleted", {
    ...common,
    toolCallId: Schema.String,
    toolId: ToolId,
    name: Schema.String,
    isFailure: Schema.Boolean,
    result: Schema.Unknown
  })
{}

/**
 * A callback opened: the turn waits for its answer.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CallbackOpened
  extends Schema.TaggedClass<CallbackOpened>("@parley/core/TurnEvent/CallbackOpened")("CallbackOpened", {
    ...common,
    callback: Callback
  })
{}

/**
 * How a callback closed.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Resolution = Schema.Literal("answered", "expired", "turn_ended", "cancelled")

/**
 * @since 0.1.0
 * @category Models
 */
export type Resolution = typeof Resolution.Type

/**
 * A callback is no longer open. `answer` is the winning answer when `resolution` is `answered`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CallbackResolved
  extends Schema.TaggedClass<CallbackResolved>("@parley/core/TurnEvent/CallbackResolved")("CallbackResolved", {
    ...common,
    callbackId: CallbackId,
    resolution: Resolution,
    answer: Schema.optional(Answer)
  })
{}

/**
 * A subagent started as a child session.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SubagentStarted
  extends Schema.TaggedClass<SubagentStarted>("@parley/core/TurnEvent/SubagentStarted")("SubagentStarted", {
    ...common,
    childSessionId: SessionId,
    childTurnId: TurnId,
    agent: Schema.String,
    task: Schema.String
  })
{}

/**
 * A subagent's turn ended.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class SubagentEnded
  extends Schema.TaggedClass<SubagentEnded>("@parley/core/TurnEvent/SubagentEnded")("SubagentEnded", {
    ...common,
    childSessionId: SessionId,
    childTurnId: TurnId,
    state: Final
  })
{}

/**
 * Every live fiber of the turn's tree waits on a callback: nothing moves until one is answered.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnBlocked extends Schema.TaggedClass<TurnBlocked>("@parley/core/TurnEvent/TurnBlocked")("TurnBlocked", {
  ...common,
  callbackIds: Schema.Array(CallbackId)
}) {}

/**
 * The last event of a turn.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnEnded extends Schema.TaggedClass<TurnEnded>("@parley/core/TurnEvent/TurnEnded")("TurnEnded", {
  ...common,
  state: Final
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export type TurnEvent =
  | TurnStarted
  | MessageDelta
  | MessageCompleted
  | ToolCallStarted
  | ToolCallCompleted
  | CallbackOpened
  | CallbackResolved
  | SubagentStarted
  | SubagentEnded
  | TurnBlocked
  | TurnEnded

/**
 * @since 0.1.0
 * @category Schemas
 */
export const TurnEvent: Schema.Union<[
  typeof TurnStarted,
  typeof MessageDelta,
  typeof MessageCompleted,
  typeof ToolCallStarted,
  typeof ToolCallCompleted,
  typeof CallbackOpened,
  typeof CallbackResolved,
  typeof SubagentStarted,
  typeof SubagentEnded,
  typeof TurnBlocked,
  typeof TurnEnded
]> = Schema.Union(
  TurnStarted,
  MessageDelta,
  MessageCompleted,
  ToolCallStarted,
  ToolCallCompleted,
  CallbackOpened,
  CallbackResolved,
  SubagentStarted,
  SubagentEnded,
  TurnBlocked,
  TurnEnded
)

/**
 * An event before the store gives it its `seq` and `at`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Draft = TurnEvent extends infer E ? E extends TurnEvent ? Omit<E, "seq" | "at"> : never : never
