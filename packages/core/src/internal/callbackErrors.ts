/** The errors of ids, answers, callbacks, grants, sessions and turns (re-exported by `ParleyError`). */
import * as Schema from "effect/Schema"
// A cycle (Answer's validation fails with `AnswerMismatch`), read lazily: only `Schema.suspend` touches it.
import { Answer } from "../Answer.js"
import { common, suffix, where } from "./errorFields.js"
import { TypeId } from "./errorTypeId.js"

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
