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
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Answer, Remember } from "./Answer.js"
import { Callback } from "./Callback.js"
import { CallbackId, RequestId, SessionId, ToolId, TurnId } from "./Ids.js"
import { NonNegativeInt, withDefault } from "./internal/schemaFields.js"
import { ArgumentCondition } from "./Permissions.js"
import { Principal } from "./Principal.js"
import { Final } from "./TurnState.js"

/** The fields every event carries. */
const common = {
  sessionId: SessionId,
  turnId: TurnId,
  seq: NonNegativeInt,
  at: Schema.DateTimeUtcFromString
}

// =============================================================================
// The version of the event schemas and the upcasting path
// =============================================================================

/**
 * The version of the event schemas. Stores persist it with every event, so a later version can migrate old logs.
 *
 * @since 0.1.0
 * @category Models
 */
export const schemaVersion = 5

/**
 * The steps from each older version to the next, as functions of the encoded (JSON) event: `upcasts[n - 1]` turns
 * an event written at version `n` into its form at version `n + 1`.
 *
 * - 1 → 2: `CallbackResolved` gained `answeredBy`, `AllowApproval` gained `arguments` and `remember`, and the grant
 *   events are new: every addition is optional, so a version-1 event reads as it is. Its `answeredBy` stays absent
 *   (nobody recorded who answered), never invented.
 * - 2 → 3: `ToolCallStarted` gained `decidedBy` (the policy rule that allowed or denied the call without asking):
 *   optional, so a version-2 event reads as it is, without it (it was not recorded, and is not guessed from today's
 *   policy).
 * - 3 → 4: `CallbackResolved` gained `requestId` (the client's id of the answer that won): optional, so a version-3
 *   event reads as it is; a retry of an answer resolved before it was recorded is refused as already answered.
 * - 4 → 5: conditions on arguments: `PermissionRule` gained `when` (in an agent's definition and an approval's
 *   `decidedBy`), `RuleMatched` gained `when`, `AllowApproval` and `DenyApproval` gained `rememberWhen`, and
 *   `ApprovalGranted` gained `when` (a grant scoped to arguments); and who may answer: `PermissionRule` and
 *   `ApprovalRequest` gained `approvers`, `Principal.Client` and `Principal.ApiKey` gained `roles`. All optional, so a
 *   version-4 event reads as it is: its rules and grants hold for every call of their tools, and anyone who reaches
 *   its approvals may answer them, as before.
 */
const upcasts: ReadonlyArray<(encoded: unknown) => unknown> = [
  (encoded) => encoded,
  (encoded) => encoded,
  (encoded) => encoded,
  (encoded) => encoded
]

/**
 * An event's encoded form, written at `version`, brought to the current `schemaVersion` (then decode it with
 * `TurnEvent`). A version this code does not know — older than 1, or newer than it reads — is a failed `Result` saying so.
 *
 * @since 0.1.0
 * @category Utils
 */
export const upcast = (version: number, encoded: unknown): Result.Result<unknown, string> => {
  if (!Number.isSafeInteger(version) || version < 1) return Result.fail(`schema version ${version} is not a version`)
  if (version > schemaVersion) {
    return Result.fail(`schema version ${version} is newer than this code reads (${schemaVersion}): upgrade Parley`)
  }
  let current = encoded
  for (let from = version; from < schemaVersion; from++) current = upcasts[from - 1](current)
  return Result.succeed(current)
}

// =============================================================================
// A turn's start and its model steps
// =============================================================================

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

// =============================================================================
// Tool calls, callbacks and grants
// =============================================================================

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
    /**
     * The conditions a call's arguments must meet for the grant to decide it (the answer's `rememberWhen`); without
     * them it decides every call of its tool (events of schema version 4 and older carry none).
     */
    when: Schema.optional(Schema.Array(ArgumentCondition)),
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

// =============================================================================
// Subagents, a blocked tree, a cancel and a turn's end
// =============================================================================

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
