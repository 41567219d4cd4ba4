/** The events of a turn's start and of its model steps (re-exported by `TurnEvent`). */
import * as Schema from "effect/Schema"
import { CallbackId, RequestId, SessionId, TurnId } from "../Ids.js"
import { common } from "./eventFields.js"
import { NonNegativeInt, withDefault } from "./schemaFields.js"

/**
 * The tool call of a parent session that gave a subagent's turn its input (`agents.spawn` or `agents.message`).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnCause extends Schema.Class<TurnCause>("@parley/core/TurnEvent/TurnCause")({
  sessionId: SessionId,
  turnId: TurnId,
  toolCallId: Schema.String
}) {}

/**
 * The W3C trace context of a turn's first span (`parley.turn`): the trace and span ids, as lowercase hex. A process
 * that takes the turn up later (another engine, after a restart) links its spans to it, so one trace shows the turn.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TraceContext extends Schema.Class<TraceContext>("@parley/core/TurnEvent/TraceContext")({
  traceId: Schema.String,
  spanId: Schema.String
}) {}

/**
 * A message was accepted: the turn exists from now on and starts when the session's earlier turns have ended.
 * `cause` names the parent's tool call for a subagent's turn; `trace` the trace context of the turn's span, when the
 * engine that accepted it traces (an optional field, added in schema version 2: older events have none); `requestId`
 * the client's id of the `sendMessage` that queued it (optional, added in schema version 3: a send repeated with it
 * finds this turn).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnQueued extends Schema.TaggedClass<TurnQueued>("@parley/core/TurnEvent/TurnQueued")("TurnQueued", {
  ...common,
  input: Schema.String,
  cause: Schema.optional(TurnCause),
  trace: Schema.optional(TraceContext),
  requestId: Schema.optional(RequestId)
}) {}

/**
 * A turn started with the user's input. A root turn names the callbacks of its tree that were still open when it
 * started (`inherited`: subagents of earlier turns waiting on an answer), so its handlers and `Blocked` cover them.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class TurnStarted extends Schema.TaggedClass<TurnStarted>("@parley/core/TurnEvent/TurnStarted")("TurnStarted", {
  ...common,
  input: Schema.String,
  inherited: withDefault(Schema.Array(CallbackId), () => [])
}) {}

/**
 * A model step began: the model is called with the session's conversation. Its text arrives as live `MessageDelta`s
 * and is stored as the step's `MessageCompleted`; a step with no result in the log was interrupted and is re-issued.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ModelStepStarted
  extends Schema.TaggedClass<ModelStepStarted>("@parley/core/TurnEvent/ModelStepStarted")("ModelStepStarted", {
    ...common,
    messageId: Schema.String,
    step: NonNegativeInt
  })
{}

/**
 * A model step was interrupted before its result (the process stopped): readers drop its partial text.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class MessageAborted
  extends Schema.TaggedClass<MessageAborted>("@parley/core/TurnEvent/MessageAborted")("MessageAborted", {
    ...common,
    messageId: Schema.String
  })
{}

/**
 * A piece of the assistant's text, as the model streams it: live readers get each one; the log keeps the step's
 * `MessageCompleted` instead. `seq` is the one of the step's `ModelStepStarted`.
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
 * Reasoning a model gave before its answer, with the provider's metadata (a provider may need it back, e.g. Mistral's
 * thinking chunks, replayed on later turns).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Reasoning extends Schema.Class<Reasoning>("@parley/core/TurnEvent/Reasoning")({
  text: Schema.String,
  metadata: withDefault(Schema.Record(Schema.String, Schema.Unknown), () => ({}))
}) {}

/**
 * The assistant's whole message of one model step: its text, and the reasoning that came with it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class MessageCompleted
  extends Schema.TaggedClass<MessageCompleted>("@parley/core/TurnEvent/MessageCompleted")("MessageCompleted", {
    ...common,
    messageId: Schema.String,
    text: Schema.String,
    reasoning: withDefault(Schema.Array(Reasoning), () => [])
  })
{}
