/** The types of a tool's schemas and of the code that answers its calls (re-exported by `ClientTool`). */
import type { KeepCallbackOpen } from "@parley/core/Answer"
import type * as Answer from "@parley/core/Answer"
import type * as Callback from "@parley/core/Callback"
import type * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { Any } from "../ClientTool.js"

/**
 * The schema of a tool's parameters: decoded and encoded, an object, and needing no services. A `Schema.Struct`
 * (or a `Schema.Class`) fits.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ParametersSchema extends Schema.Codec<object, object> {}

/**
 * The schema of a tool's success value or typed failure: a schema that needs no services.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ResultSchema extends Schema.Codec<unknown, unknown> {}

/**
 * What `make` accepts as `parameters`: the fields of a `Schema.Struct` (`{ precision: Schema.String }`), or a
 * schema whose decoded and encoded types are objects (`Schema.Struct(...)`, a `Schema.Class`).
 *
 * @since 0.1.0
 * @category Models
 */
export type ParametersInput = Schema.Struct.Fields | ParametersSchema

/**
 * The parameters schema `make` builds from its input: the schema itself, or `Schema.Struct(fields)`.
 *
 * @since 0.1.0
 * @category Models
 */
export type ParametersOf<P extends ParametersInput> = P extends ParametersSchema ? P
  : P extends Schema.Struct.Fields ? Schema.Struct<P> extends ParametersSchema ? Schema.Struct<P> : never
  : never

/**
 * What a tool's code returns: the success value (decoded side), `KeepCallbackOpen` to leave the call to someone
 * else, or an `Effect` of either whose typed failure is the tool's failure.
 *
 * @since 0.1.0
 * @category Models
 */
export type HandlerResult<S, F, R = never> = S | KeepCallbackOpen | Effect.Effect<S | KeepCallbackOpen, F, R>

/**
 * A tool's code: the decoded parameters (and the callback, for its ids) in, a `HandlerResult` out.
 *
 * @since 0.1.0
 * @category Models
 */
export type Handler<P, S, F, R = never> = (
  params: P,
  callback: Callback.OpenClientToolCall
) => HandlerResult<S, F, R>

/**
 * What `run` succeeds with for a function whose results are `Out`: the `ClientToolResult` to send, and
 * `KeepCallbackOpen` only when the function can return it (a function that never does gives an answer
 * `Turn.answer` takes as it is).
 *
 * @since 0.1.0
 * @category Models
 */
export type RunResult<Out> = Answer.ClientToolResult | (KeepCallbackOpen extends Out ? KeepCallbackOpen : never)

/**
 * The function `run` takes: like `Handler`, with its result type `Out` kept so that `RunResult` can tell whether
 * it may keep the callback open.
 *
 * @since 0.1.0
 * @category Models
 */
export type RunFunction<P, Out, F, R = never> = (
  params: P,
  callback: Callback.OpenClientToolCall
) => Out | Effect.Effect<Out, F, R>

/**
 * How one tool's calls are answered: made by `tool.answer(fn)`, combined by `ClientTool.answers`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolAnswer {
  readonly tool: Any
  readonly handle: (callback: Callback.OpenClientToolCall) => Effect.Effect<Answer.ClientToolResult | KeepCallbackOpen>
}

/**
 * A `clientTool` handler: it fits the `clientTool` slot of a `CallbackHandler.Handlers` record.
 *
 * @since 0.1.0
 * @category Models
 */
export type ClientToolHandler = (
  callback: Callback.OpenClientToolCall
) => Effect.Effect<Answer.ClientToolResult | KeepCallbackOpen>
