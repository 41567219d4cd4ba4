/**
 * The typed errors of Parley. Each is a `Schema.TaggedError`, so an error raised in a server reaches an HTTP
 * client as the same value; `ParleyError` is both the union type and the schema that decodes it.
 *
 * @example
 * ```ts
 * import { ParleyError } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.fail(
 *   new ParleyError.CallbackNotOpen({ module: "Turn", method: "answer", callbackId: "cb_1" })
 * ).pipe(
 *   Effect.catchIf(ParleyError.isParleyError, (error) => Effect.log(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
// A cycle (Answer's validation fails with `AnswerMismatch`), read lazily: only `Schema.suspend` touches it.
import { Answer } from "./Answer.js"
import { Approvers } from "./Permissions.js"

/** The fields and message helpers every Parley error shares. */
const common = {
  module: Schema.String,
  method: Schema.String,
  description: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}

const where = (error: { readonly module: string; readonly method: string }) => `${error.module}.${error.method}`
const suffix = (description: string | undefined) => (description === undefined ? "" : `: ${description}`)

// =============================================================================
// The brand every Parley error carries
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = Symbol.for("@parley/core/ParleyError")

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId

// =============================================================================
// Errors of ids, answers, callbacks, grants, sessions and turns
// =============================================================================

/**
 * An id that does not have the form its kind requires.
 *
 * @since 0.1.0
 * @category Errors
 */
export class InvalidId extends Schema.TaggedError<InvalidId>("@parley/core/ParleyError/InvalidId")("InvalidId", {
  ...common,
  kind: Schema.Literals(["sessionId", "turnId", "callbackId", "toolId", "requestId"]),
  value: Schema.String
}) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: invalid ${this.kind} ${JSON.stringify(this.value)}${suffix(this.description)}`
  }
}

/**
 * The answer does not fit the callback; nothing was sent.
 *
 * @since 0.1.0
 * @category Errors
 */
export class AnswerMismatch
  extends Schema.TaggedError<AnswerMismatch>("@parley/core/ParleyError/AnswerMismatch")("AnswerMismatch", {
    ...common,
    callbackId: Schema.String,
    reason: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: the answer does not fit callback ${this.callbackId}: ${this.reason}. Nothing was sent.`
  }
}

/**
 * The callback is not open: it does not exist, or it was closed without an answer (expired, cancelled, turn ended).
 *
 * @since 0.1.0
 * @category Errors
 */
export class CallbackNotOpen
  extends Schema.TaggedError<CallbackNotOpen>("@parley/core/ParleyError/CallbackNotOpen")("CallbackNotOpen", {
    ...common,
    callbackId: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: callback ${this.callbackId} is not open${suffix(this.description)}`
  }
}

/**
 * The answer came from a principal the callback does not let answer it (the asking rule's `approvers`): nothing was
 * stored and the callback is still open. `principal` says who answered, `approvers` who may (HTTP 403).
 *
 * @since 0.1.0
 * @category Errors
 */
export class NotAllowedToAnswer extends Schema.TaggedError<NotAllowedToAnswer>(
  "@parley/core/ParleyError/NotAllowedToAnswer"
)("NotAllowedToAnswer", {
  ...common,
  callbackId: Schema.String,
  principal: Schema.String,
  approvers: Approvers
}) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    const who = [
      ...(this.approvers.roles.length === 0 ? [] : [`a principal with role ${this.approvers.roles.join(" or ")}`]),
      ...this.approvers.principals
    ]
    return `${where(this)}: ${this.principal} may not answer callback ${this.callbackId}; ${
      who.length === 0 ? "nobody may" : `it may be answered by ${who.join(", or ")}`
    }; the callback is still open`
  }
}

/**
 * The session has no grant in force with this id (never granted, or already revoked). Nothing was changed.
 *
 * @since 0.1.0
 * @category Errors
 */
export class GrantNotFound
  extends Schema.TaggedError<GrantNotFound>("@parley/core/ParleyError/GrantNotFound")("GrantNotFound", {
    ...common,
    sessionId: Schema.String,
    grantId: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: session ${this.sessionId} has no grant ${this.grantId} in force${suffix(this.description)}`
  }
}

/**
 * Another answer to the callback won first; this one was not stored.
 *
 * @since 0.1.0
 * @category Errors
 */
export class CallbackAlreadyAnswered extends Schema.TaggedError<CallbackAlreadyAnswered>(
  "@parley/core/ParleyError/CallbackAlreadyAnswered"
)("CallbackAlreadyAnswered", {
  ...common,
  callbackId: Schema.String,
  /** The answer that won (the `CallbackResolved` in the log carries it too). */
  answer: Schema.optional(Schema.suspend((): typeof Answer => Answer).annotate({ identifier: "Answer" }))
}) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: callback ${this.callbackId} was already answered`
  }
}

/**
 * @since 0.1.0
 * @category Errors
 */
export class SessionNotFound
  extends Schema.TaggedError<SessionNotFound>("@parley/core/ParleyError/SessionNotFound")("SessionNotFound", {
    ...common,
    sessionId: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: no session ${this.sessionId}`
  }
}

/**
 * @since 0.1.0
 * @category Errors
 */
export class TurnNotFound
  extends Schema.TaggedError<TurnNotFound>("@parley/core/ParleyError/TurnNotFound")("TurnNotFound", {
    ...common,
    sessionId: Schema.String,
    turnId: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: no turn ${this.turnId} in session ${this.sessionId}`
  }
}

// =============================================================================
// Errors of policies, agents, models, transports, the runtime, tools and handlers
// =============================================================================

/**
 * A permission policy that cannot be used: a malformed tool pattern, an unknown namespace, …
 *
 * @since 0.1.0
 * @category Errors
 */
export class PolicyInvalid
  extends Schema.TaggedError<PolicyInvalid>("@parley/core/ParleyError/PolicyInvalid")("PolicyInvalid", {
    ...common,
    issues: Schema.Array(Schema.String)
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: invalid permission policy: ${this.issues.join("; ")}`
  }
}

/**
 * A client API call (`Agent`, `Session`, `Turn`, `Inbox`) made with no Parley runtime in context: no `Transport`
 * service. The message says which layer provides one.
 *
 * @since 0.1.0
 * @category Errors
 */
export class RuntimeMissing
  extends Schema.TaggedError<RuntimeMissing>("@parley/core/ParleyError/RuntimeMissing")("RuntimeMissing", {
    ...common,
    service: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: no Parley runtime in context (no ${this.service} service): provide ` +
      "`LocalTransport.layerMemory()` (in-process, from @parley/runtime), the SQLite one-liner " +
      "`SqlRuntime.layerSqlite()` (durable, from @parley/store-sql), or `HttpTransport.layer(…)` (a server, from " +
      "@parley/transport-http)" +
      suffix(this.description)
  }
}

/**
 * An agent definition that cannot run: an unknown model, duplicate tool names, …
 *
 * @since 0.1.0
 * @category Errors
 */
export class AgentInvalid
  extends Schema.TaggedError<AgentInvalid>("@parley/core/ParleyError/AgentInvalid")("AgentInvalid", {
    ...common,
    agent: Schema.String,
    issues: Schema.Array(Schema.String)
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: agent ${this.agent} is invalid: ${this.issues.join("; ")}`
  }
}

/**
 * The model failed (network, provider error, malformed output).
 *
 * @since 0.1.0
 * @category Errors
 */
export class ModelFailure
  extends Schema.TaggedError<ModelFailure>("@parley/core/ParleyError/ModelFailure")("ModelFailure", {
    ...common,
    model: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: model ${this.model} failed${suffix(this.description)}`
  }
}

/**
 * The transport could not carry a request (connection refused, unexpected response, …).
 *
 * @since 0.1.0
 * @category Errors
 */
export class TransportFailure
  extends Schema.TaggedError<TransportFailure>("@parley/core/ParleyError/TransportFailure")("TransportFailure", {
    ...common
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: transport failure${suffix(this.description)}`
  }
}

/**
 * A request the server refused because it is over one of the server's limits (`HttpTransport`: a 413 or a 429): a
 * body over `maxBodyBytes` (`limit: "bodyBytes"`), a message over `maxMessageLength` (`"messageLength"`), as many
 * requests in flight as the key may have (`"requestsInFlight"`) or as many sessions started in the last minute
 * (`"sessionsPerMinute"`). `max` is the limit; `retryAfter` (seconds) says when the same request may be sent again, where
 * waiting helps. Nothing was done: unlike a `TransportFailure`, sending the same request again unchanged is refused
 * again until the limit frees.
 *
 * @since 0.1.0
 * @category Errors
 */
export class LimitExceeded
  extends Schema.TaggedError<LimitExceeded>("@parley/core/ParleyError/LimitExceeded")("LimitExceeded", {
    ...common,
    limit: Schema.Literals(["bodyBytes", "messageLength", "requestsInFlight", "sessionsPerMinute"]),
    max: Schema.Number,
    retryAfter: Schema.optional(Schema.Number)
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    const retry = this.retryAfter === undefined ? "" : ` (retry in ${this.retryAfter} s)`
    return `${where(this)}: over the server's limit of ${this.max} ${limitNames[this.limit]}${retry}`
  }
}

const limitNames = {
  bodyBytes: "bytes per request body",
  messageLength: "characters per message",
  requestsInFlight: "requests in flight per key",
  sessionsPerMinute: "sessions started per key per minute"
} as const

/**
 * A turn took as many model steps as its agent allows (`maxSteps`) and the model still called tools: it ends
 * `Failed` rather than loop.
 *
 * @since 0.1.0
 * @category Errors
 */
export class StepLimitReached
  extends Schema.TaggedError<StepLimitReached>("@parley/core/ParleyError/StepLimitReached")("StepLimitReached", {
    ...common,
    limit: Schema.Number
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: the turn reached its limit of ${this.limit} model steps`
  }
}

/**
 * A tool that runs in the runtime (a connector's) died instead of returning a result or a tool error.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ToolFailure
  extends Schema.TaggedError<ToolFailure>("@parley/core/ParleyError/ToolFailure")("ToolFailure", {
    ...common,
    toolId: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: tool ${this.toolId} failed${suffix(this.description)}`
  }
}

/**
 * A callback handler failed or died while answering a callback. The callback stays open: answer it by id, or wait
 * again with other handlers.
 *
 * @since 0.1.0
 * @category Errors
 */
export class HandlerFailed
  extends Schema.TaggedError<HandlerFailed>("@parley/core/ParleyError/HandlerFailed")("HandlerFailed", {
    ...common,
    callbackId: Schema.String,
    kind: Schema.String
  })
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${where(this)}: the ${this.kind} handler for callback ${this.callbackId} failed${
      suffix(this.description)
    }; the callback is still open`
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export type ParleyError =
  | InvalidId
  | AnswerMismatch
  | CallbackNotOpen
  | CallbackAlreadyAnswered
  | NotAllowedToAnswer
  | GrantNotFound
  | SessionNotFound
  | TurnNotFound
  | PolicyInvalid
  | AgentInvalid
  | ModelFailure
  | TransportFailure
  | LimitExceeded
  | RuntimeMissing
  | StepLimitReached
  | ToolFailure
  | HandlerFailed

/**
 * @since 0.1.0
 * @category Schemas
 */
export const ParleyError: Schema.Union<
  readonly [
    typeof InvalidId,
    typeof AnswerMismatch,
    typeof CallbackNotOpen,
    typeof CallbackAlreadyAnswered,
    typeof NotAllowedToAnswer,
    typeof GrantNotFound,
    typeof SessionNotFound,
    typeof TurnNotFound,
    typeof PolicyInvalid,
    typeof AgentInvalid,
    typeof ModelFailure,
    typeof TransportFailure,
    typeof LimitExceeded,
    typeof RuntimeMissing,
    typeof StepLimitReached,
    typeof ToolFailure,
    typeof HandlerFailed
  ]
> = Schema.Union([
  InvalidId,
  AnswerMismatch,
  CallbackNotOpen,
  CallbackAlreadyAnswered,
  NotAllowedToAnswer,
  GrantNotFound,
  SessionNotFound,
  TurnNotFound,
  PolicyInvalid,
  AgentInvalid,
  ModelFailure,
  TransportFailure,
  LimitExceeded,
  RuntimeMissing,
  StepLimitReached,
  ToolFailure,
  HandlerFailed
])

/**
 * @since 0.1.0
 * @category Guards
 */
export const isParleyError = (u: unknown): u is ParleyError => Predicate.hasProperty(u, TypeId)
