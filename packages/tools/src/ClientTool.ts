/**
 * Client tools: tools the program answers, not the runtime (unless it gives the runtime their code: `RuntimeTools` of
 * `@parley/runtime` takes `tool.answer(fn)` entries and `Tool.make` tools). When the model calls one, the turn opens an
 * `OpenClientToolCall` callback and waits; the program decodes the arguments with the tool's `parameters` schema,
 * runs its own code and answers with a `ClientToolResult` holding the value encoded with the tool's `success` schema
 * (or a tool error).
 *
 * A `ClientTool` is pure Schema data plus typed helpers; it imports nothing from the runtime, so a client process can
 * declare tools and answer their callbacks on its own:
 *
 * - `tool.run(callback, fn)`: any callback of a turn in; for a call of this tool, decode the arguments, run `fn` and
 *   encode its result into a `ClientToolResult`; for any other callback, fail with `NotThisTool` (typed);
 * - `tool.called(callback)`: is this callback a call of this tool?
 * - `tool.answer(fn)` and `ClientTool.answers(...)`: the `clientTool` handler of `CallbackHandler.layer`;
 * - `ClientTool.toSpec(tool)`: the serialisable `ToolSpec` (JSON Schemas) an agent definition carries;
 * - `ClientTool.decodeResult(tool, result)`: check a hand-made result before sending it.
 *
 * `make` returns the tool directly. Its stable id is `client.<name>`; a malformed name fails with a typed `InvalidId`
 * from `ClientTool.validate` / `ClientTool.toSpec`, and with `AgentInvalid` when a session starts.
 *
 * @example
 * ```ts
 * import { type Callback, CallbackHandler, Turn } from "@parley/core"
 * import { ClientTool, ToolAnnotations } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * const Location = Schema.Struct({ city: Schema.String, country: Schema.String })
 *
 * const getLocation = ClientTool.make("get_location", {
 *   description: "The user's current location.",
 *   parameters: { precision: Schema.Literals(["city", "street"]).pipe(Schema.withDecodingDefault(Effect.succeed("city" as const))) },
 *   success: Location,
 *   annotations: ToolAnnotations.readOnly
 * })
 *
 * // read it from the device: the parameters arrive decoded (the default applied), the result type is checked
 * const readLocation = (_: ClientTool.Parameters<typeof getLocation>) => ({ city: "Lyon", country: "France" })
 *
 * // answer while a run waits
 * const Handlers = CallbackHandler.layer({ clientTool: ClientTool.answers(getLocation.answer(readLocation)) })
 *
 * // or answer by id, whatever the callback: `run` fails with NotThisTool when it is not a get_location call
 * const answerById = (turn: Turn.Turn, callback: Callback.Callback) =>
 *   getLocation.run(callback, readLocation).pipe(
 *     Effect.flatMap((result) => Turn.answer(turn, callback.id, result)),
 *     Effect.catchTag("NotThisTool", () => Effect.void) // not ours: leave it open
 *   )
 * ```
 *
 * @since 0.1.0
 */
import type { KeepCallbackOpen } from "@parley/core/Answer"
import type * as Answer from "@parley/core/Answer"
import type * as Callback from "@parley/core/Callback"
import type { AnswerMismatch, InvalidId } from "@parley/core/ParleyError"
import type * as ToolSpec from "@parley/core/ToolSpec"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import type * as Schema from "effect/Schema"
import * as InternalDecoding from "./internal/decoding.js"
import * as InternalJsonSchema from "./internal/jsonSchema.js"
import * as InternalMake from "./internal/make.js"
import * as InternalRun from "./internal/run.js"
import type * as ToolAnnotations from "./ToolAnnotations.js"

// ===== Models =====

/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = InternalMake.TypeId

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId

// ===== The schemas of a tool and the code that answers its calls =====

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

/**
 * A client tool: a name, a description, Effect Schemas for its parameters, success value and failure, and hints.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ClientTool<
  Name extends string,
  Parameters extends ParametersSchema,
  Success extends ResultSchema,
  Failure extends ResultSchema
> extends Pipeable {
  readonly [TypeId]: TypeId
  /** The name the model sees. */
  readonly name: Name
  /** The stable id permission policies match: `client.<name>` (checked by `validate` and `toSpec`). */
  readonly id: `client.${Name}`
  readonly description: string
  /** Decodes the arguments the model gives. */
  readonly parameters: Parameters
  /** Encodes the value the program answers with. */
  readonly success: Success
  /** Encodes the typed failure of the program's code (`Schema.String` unless given). */
  readonly failure: Failure
  readonly annotations: ToolAnnotations.ToolAnnotations
  /**
   * The tool's serialisable description, for `Agent.make({ tools })`. The name is checked when a session starts
   * (or up front with `toSpec`).
   */
  readonly spec: ToolSpec.ToolSpec
  /**
   * Whether `callback` is a call of this tool (its `request.tool.id` is this tool's id).
   */
  called(callback: Callback.Callback): callback is Callback.OpenClientToolCall
  /**
   * Answers a call of this tool with `fn`; any other callback fails with `NotThisTool`: see `ClientTool.run`.
   */
  run<Out extends Schema.Schema.Type<Success> | KeepCallbackOpen, R = never>(
    callback: Callback.Callback,
    fn: RunFunction<Schema.Schema.Type<Parameters>, Out, Schema.Schema.Type<Failure>, R>
  ): Effect.Effect<RunResult<Out>, NotThisTool, R>
  /**
   * An entry for `ClientTool.answers`: calls of this tool are answered with `fn`.
   */
  answer(
    fn: Handler<Schema.Schema.Type<Parameters>, Schema.Schema.Type<Success>, Schema.Schema.Type<Failure>>
  ): ToolAnswer
}

/**
 * Any client tool.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Any extends ClientTool<string, ParametersSchema, ResultSchema, ResultSchema> {}

/**
 * The decoded parameters of a tool.
 *
 * @since 0.1.0
 * @category Models
 */
export type Parameters<T extends Any> = Schema.Schema.Type<T["parameters"]>

/**
 * The success value of a tool (decoded side).
 *
 * @since 0.1.0
 * @category Models
 */
export type Success<T extends Any> = Schema.Schema.Type<T["success"]>

/**
 * The typed failure of a tool (decoded side).
 *
 * @since 0.1.0
 * @category Models
 */
export type Failure<T extends Any> = Schema.Schema.Type<T["failure"]>

// ===== The error of run given a callback that is not a call of its tool =====

/**
 * `run` was given a callback that is not a call of its tool: an approval, a sign-in, or a call of another client
 * tool. Nothing ran. A program answering every callback by id catches it to leave the callback open for another
 * client (`Effect.catchTag("NotThisTool", () => Effect.void)`) or to try another tool.
 *
 * @since 0.1.0
 * @category Errors
 */
export class NotThisTool extends Data.TaggedError("NotThisTool")<{
  /** The id of the tool `run` was called on (`client.<name>`). */
  readonly toolId: string
  /** The callback it was given. */
  readonly callback: Callback.Callback
}> {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const what = this.callback._tag === "OpenClientToolCall"
      ? `a call of ${this.callback.request.tool.id}`
      : this.callback.kind === "approval"
      ? "an approval"
      : "a sign-in"
    return `callback ${this.callback.id} is ${what}, not a call of ${this.toolId}`
  }
}

// ===== Guards =====

/**
 * @since 0.1.0
 * @category Guards
 */
export const isClientTool = (u: unknown): u is Any => Predicate.hasProperty(u, TypeId)

/**
 * Whether `callback` is a call of `tool`: an `OpenClientToolCall` whose `request.tool.id` is the tool's id.
 *
 * @since 0.1.0
 * @category Guards
 */
export const called = (tool: Any, callback: Callback.Callback): callback is Callback.OpenClientToolCall =>
  InternalRun.called(tool, callback)

// ===== Constructors =====

/**
 * The options of `make` (and of `Tool.make`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options<
  P extends ParametersInput,
  S extends ResultSchema,
  F extends ResultSchema
> {
  /** What the tool does, for the model. */
  readonly description: string
  /** The fields of a `Schema.Struct`, or an object schema. Defaults to no parameters. */
  readonly parameters?: P | undefined
  /** The schema of the value the program answers with. */
  readonly success: S
  /** The schema of the tool's typed failure. Defaults to `Schema.String`. */
  readonly failure?: F | undefined
  /** Hints about what the tool does (`ToolAnnotations.readOnly`, …). */
  readonly annotations?: ToolAnnotations.ToolAnnotations | ToolAnnotations.Hints | undefined
}

/**
 * Defines a client tool. `parameters` is a record of `Schema.Struct` fields or an object schema; `success` and
 * `failure` (default `Schema.String`) are schemas. The id is `client.<name>`; `validate` and `toSpec` check it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = <
  const Name extends string,
  S extends ResultSchema,
  P extends ParametersInput = {},
  F extends ResultSchema = typeof Schema.String
>(name: Name, options: Options<P, S, F>): ClientTool<Name, ParametersOf<P>, S, F> => InternalMake.make(name, options)

/**
 * Checks the tool's name: its id `client.<name>` must be a valid tool id. Fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = <T extends Any>(tool: T): Effect.Effect<T, InvalidId> =>
  Effect.as(InternalJsonSchema.checkedId(tool, "validate"), tool)

// ===== JSON Schema =====

/**
 * The JSON Schema of a schema's encoded side, as a model reads it: no top-level `$ref` (a `Schema.Class` is
 * inlined), nested named schemas under `$defs`, no `$schema` key. An empty struct is `{ type: "object" }` with no
 * properties.
 *
 * @since 0.1.0
 * @category Utils
 */
export const jsonSchema = (schema: Schema.Top): ToolSpec.JsonSchema => InternalJsonSchema.make(schema)

/**
 * The serialisable description of the tool, as an agent definition carries it: id, name, description, the JSON
 * Schemas of parameters, success and failure, and the annotations. Fails with `InvalidId` when the name does not
 * make a valid tool id.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toSpec = (tool: Any): Effect.Effect<ToolSpec.ToolSpec, InvalidId> =>
  Effect.as(InternalJsonSchema.checkedId(tool, "toSpec"), InternalJsonSchema.specOf(tool))

// ===== Answering =====

/**
 * Answers a callback of a turn with `fn` when it is a call of `tool`:
 *
 * 1. any other callback (an approval, a sign-in, a call of another tool) fails with `NotThisTool`, a typed error,
 *    and `fn` does not run: a program that answers by id passes every callback and catches it;
 * 2. the arguments are decoded with `parameters` (defaults applied, extra keys dropped); arguments that do not decode
 *    become `ClientToolResult.failure("Invalid arguments for <name>: <path>: <problem>; …")`, a tool error the model
 *    can correct, never a failure of this Effect;
 * 3. `fn(params, callback)` runs; it returns the success value, `KeepCallbackOpen` (returned as is) or an Effect;
 *    when `fn` cannot return `KeepCallbackOpen`, neither can `run` (see `RunResult`), so its result goes straight
 *    to `Turn.answer`;
 * 4. the success value is encoded with `success` into `ClientToolResult.success(encoded)`, a typed failure with
 *    `failure` into `ClientToolResult.failure(encoded)`. A value the schemas cannot encode (a bug in `fn`) becomes a
 *    generic tool error and a logged warning.
 *
 * The Effect fails only with `NotThisTool`; a defect (a throw) in `fn` stays a defect.
 *
 * @example
 * ```ts
 * import { Answer, type Callback, Turn } from "@parley/core"
 * import { ClientTool } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * const getLocation = ClientTool.make("get_location", {
 *   description: "The user's current location.",
 *   success: Schema.Struct({ city: Schema.String, country: Schema.String })
 * })
 *
 * // answers one open callback by id, whatever its kind
 * const answerCallback = (turn: Turn.Turn, callback: Callback.Callback) =>
 *   Effect.gen(function*() {
 *     switch (callback._tag) {
 *       case "OpenApproval":
 *         return yield* Turn.answer(turn, callback.id, new Answer.AllowApproval())
 *       case "OpenClientToolCall":
 *         return yield* Turn.answer(turn, callback.id, yield* getLocation.run(callback, () => ({ city: "Lyon", country: "France" })))
 *       case "OpenSignIn":
 *         return yield* Turn.answer(turn, callback.id, new Answer.SignInAnswer({ denied: callback.requests.map((r) => r.id) }))
 *     }
 *   }).pipe(Effect.catchTag("NotThisTool", () => Effect.void)) // another tool's call: leave it open
 * ```
 *
 * @since 0.1.0
 * @category Utils
 */
export const run = <T extends Any, Out extends Success<T> | KeepCallbackOpen, R = never>(
  tool: T,
  callback: Callback.Callback,
  fn: RunFunction<Parameters<T>, Out, Failure<T>, R>
): Effect.Effect<RunResult<Out>, NotThisTool, R> => InternalRun.run(tool, callback, fn)

/**
 * An entry for `answers`: calls of `tool` are answered by running `fn` (see `run`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answer = <T extends Any>(tool: T, fn: Handler<Parameters<T>, Success<T>, Failure<T>>): ToolAnswer =>
  InternalRun.answer(tool, fn)

/**
 * The `clientTool` handler of `CallbackHandler.layer` from tool answers: a call goes to the entries for its tool,
 * in order, and the first that does not keep it open answers. Calls of other tools stay open.
 *
 * @example
 * ```ts
 * import { CallbackHandler } from "@parley/core"
 * import { ClientTool } from "@parley/tools"
 * import { Schema } from "effect"
 *
 * const getLocation = ClientTool.make("get_location", {
 *   description: "The user's current location.",
 *   success: Schema.Struct({ city: Schema.String, country: Schema.String })
 * })
 *
 * const Handlers = CallbackHandler.layer({
 *   clientTool: ClientTool.answers(getLocation.answer(() => ({ city: "Lyon", country: "France" })))
 * })
 * ```
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answers = (...entries: ReadonlyArray<ToolAnswer>): ClientToolHandler => InternalRun.answers(...entries)

// ===== Checking results =====

/**
 * Checks a `ClientToolResult` against the tool before it is sent: a success must decode with `success`, a failure
 * with `failure` (a plain string message is always accepted as a tool error, as `run` sends for bad arguments).
 * Fails with `AnswerMismatch` (naming `callbackId` when given); succeeds with the result unchanged.
 *
 * @since 0.1.0
 * @category Utils
 */
export const decodeResult = (
  tool: Any,
  result: Answer.ClientToolResult,
  callbackId?: string
): Effect.Effect<Answer.ClientToolResult, AnswerMismatch> => InternalDecoding.decodeResult(tool, result, callbackId)
