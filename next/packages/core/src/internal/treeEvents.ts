/** The events of subagents, of a blocked tree and of a turn's end (re-exported by `TurnEvent`). */
import * as Schema from "effect/Schema"
import { CallbackId, SessionId, TurnId } from "../Ids.js"
import { Final } from "../TurnState.js"
import { common } from "./eventFields.js"

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
    task: Schema.String,
    toolCallId: Schema.optional(Schema.String)
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
 * A cancel of the session (and every subagent under it) began; the events that close its turns follow.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class CancelRequested
  extends Schema.TaggedClass<CancelRequested>("@parley/core/TurnEvent/CancelRequested")("CancelRequested", {
    ...common
  })
{}

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
