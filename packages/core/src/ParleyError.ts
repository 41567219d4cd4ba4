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
import {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  InvalidId,
  SessionNotFound,
  TurnNotFound
} from "./internal/callbackErrors.js"
import { TypeId } from "./internal/errorTypeId.js"
import {
  AgentInvalid,
  HandlerFailed,
  LimitExceeded,
  ModelFailure,
  PolicyInvalid,
  RuntimeMissing,
  StepLimitReached,
  ToolFailure,
  TransportFailure
} from "./internal/runErrors.js"

/**
 * The brand every Parley error carries: `TypeId`.
 *
 * @since 0.1.0
 */
export * from "./internal/errorTypeId.js"

/**
 * The errors of ids, answers and callbacks: `InvalidId`, `AnswerMismatch`, `CallbackNotOpen`, `GrantNotFound`,
 * `CallbackAlreadyAnswered`, `SessionNotFound`, `TurnNotFound`.
 *
 * @since 0.1.0
 */
export * from "./internal/callbackErrors.js"

/**
 * The errors of running agents: `PolicyInvalid`, `RuntimeMissing`, `AgentInvalid`, `ModelFailure`,
 * `TransportFailure`, `LimitExceeded`, `StepLimitReached`, `ToolFailure`, `HandlerFailed`.
 *
 * @since 0.1.0
 */
export * from "./internal/runErrors.js"

/**
 * @since 0.1.0
 * @category Models
 */
export type ParleyError =
  | InvalidId
  | AnswerMismatch
  | CallbackNotOpen
  | CallbackAlreadyAnswered
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
