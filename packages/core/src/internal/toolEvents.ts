/** The events of tool calls, callbacks and grants (re-exported by `TurnEvent`). */
import * as Schema from "effect/Schema"
import { Answer, Remember } from "../Answer.js"
import { Callback } from "../Callback.js"
import { CallbackId, RequestId, ToolId } from "../Ids.js"
import { Principal } from "../Principal.js"
import { common } from "./eventFields.js"

/**
 * The model asked for a tool call. `decidedBy` is set when the permission policy decided the call without asking —
 * `Policy { rule }`, naming the rule (or the default) and its decision, e.g. `rules[1] client.delete_*: deny` — so the
 * log says what allowed or denied every call. It is absent when the policy asked (the approval's `decidedBy` names the
 * rule that asked, its `CallbackResolved`'s `answeredBy` who answered), for the subagent tools the policy does not
 * cover (`agents.message`, `agents.wait`, `agents.interrupt`), and in events of schema version 2 and older.
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
    arguments: Schema.Unknown,
    /** What decided the call without asking: the permission policy's rule (events of schema version ≤ 2 carry none). */
    decidedBy: Schema.optional(Principal)
  })
{}

/**
 * Who runs a tool: the owner of the tree's lease and the lease's epoch (its fencing token) when the start was
 * recorded.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Executor = Schema.Struct({ owner: Schema.String, epoch: Schema.Number })

/**
 * @since 0.1.0
 * @category Models
 */
export interface Executor extends Schema.Schema.Type<typeof Executor> {}

/**
 * A tool that runs in the runtime (a connector's, or a program's tool marked `runsIn: "runtime"`) is about to run: its
 * side effect may happen from now on. The process that runs it appends this event itself, under its lease (`executor`),
 * and runs the tool only once the append succeeded; an answer never records it. A call with this event from another
 * owner or epoch and no result was interrupted: it is reported to the model as interrupted, never run again (unless the
 * tool is idempotent). Logs written before 0.2 have no `executor`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ToolExecutionStarted extends Schema.TaggedClass<ToolExecutionStarted>(
  "@parley/core/TurnEvent/ToolExecutionStarted"
)("ToolExecutionStarted", {
  ...common,
  toolCallId: Schema.String,
  toolId: ToolId,
  executor: Schema.optional(Executor)
}) {}

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
export const Resolution = Schema.Literals(["answered", "expired", "turn_ended", "cancelled"])

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
    answer: Schema.optional(Answer),
    /** Who or what gave the answer (events of schema version 1 carry none). */
    answeredBy: Schema.optional(Principal),
    /**
     * The client's id of the answer that won (`AnswerRequest.requestId`; events of schema version 3 and older carry
     * none): the same answer sent again with it — a retry whose first try was accepted — succeeds and adds nothing.
     */
    requestId: Schema.optional(RequestId)
  })
{}

/**
 * An approval answered with `remember` became a grant: later calls of `toolPattern` (a stable tool id) in its scope —
 * the session `sessionId` (`session`), or the whole tree (`tree`) — are decided by it without asking, while the
 * permission policy still says `ask` (a policy `deny` or `allow` decides first). `grantId` is `grant_` and 20 random
 * hex digits: it tells nothing about another grant's (ids are not secrets: tenant checks guard access).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ApprovalGranted
  extends Schema.TaggedClass<ApprovalGranted>("@parley/core/TurnEvent/ApprovalGranted")("ApprovalGranted", {
    ...common,
    grantId: Schema.String,
    toolPattern: Schema.String,
    decision: Schema.Literals(["allow", "deny"]),
    scope: Remember,
    grantedBy: Principal,
    /** The approval whose answer made the grant. */
    callbackId: CallbackId
  })
{}

/**
 * A grant was revoked (`Session.revokeGrant`): calls of its tool ask again.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class GrantRevoked
  extends Schema.TaggedClass<GrantRevoked>("@parley/core/TurnEvent/GrantRevoked")("GrantRevoked", {
    ...common,
    grantId: Schema.String,
    revokedBy: Principal
  })
{}
