/** The errors of policies, agents, models, transports, the runtime, tools and handlers (re-exported by `ParleyError`). */
import * as Schema from "effect/Schema"
import { common, suffix, where } from "./errorFields.js"
import { TypeId } from "./errorTypeId.js"

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
