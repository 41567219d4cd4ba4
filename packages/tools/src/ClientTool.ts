/**
 * Client tools: tools the program answers, not the runtime. When the model calls one, the turn opens an
 * `OpenClientToolCall` callback and waits; the program decodes the arguments with the tool's `parameters` schema,
 * runs its own code and answers with a `ClientToolResult` holding the value encoded with the tool's `success` schema
 * (or a tool error).
 *
 * A `ClientTool` is pure Schema data plus typed helpers; it imports nothing from the runtime, so a client process can
 * declare tools and answer their callbacks on its own:
 *
 * - `tool.called(callback)`: is this callback a call of this tool?
 * - `tool.run(callback, fn)`: decode the arguments, run `fn`, encode its result into a `ClientToolResult`;
 * - `tool.answer(fn)` and `ClientTool.answers(...)`: the `clientTool` handler of `CallbackHandler.layer`;
 * - `ClientTool.toSpec(tool)`: the serialisable `ToolSpec` (JSON Schemas) an agent definition carries;
 * - `ClientTool.decodeResult(tool, result)`: check a hand-made result before sending it.
 *
 * `make` returns the tool directly. Its stable id is `client.<name>`; a name that does not match
 * `^[A-Za-z0-9][A-Za-z0-9_-]*$` fails with a typed `InvalidId` from `ClientTool.validate` and `ClientTool.toSpec`,
 * which is where an agent definition checks its tools.
 *
 * @example
 * ```ts
 * import { Answer, type Callback, CallbackHandler } from "@parley/core"
 * import { ClientTool, ToolAnnotations } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * const Location = Schema.Struct({ city: Schema.String, country: Schema.String })
 *
 * const getLocation = ClientTool.make("get_location", {
 *   description: "The user's current location.",
 *   parameters: { precision: Schema.optionalWith(Schema.Literal("city", "street"), { default: () => "city" }) },
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
 * // or answer by id: the answer to send for one open callback
 * const answerFor = (callback: Callback.Callback) =>
 *   getLocation.called(callback)
 *     ? getLocation.run(callback, readLocation) // Effect<ClientToolResult | KeepCallbackOpen>
 *     : Effect.succeed(new Answer.KeepCallbackOpen()) // not ours: leave it open
 * ```
 *
 * @since 0.1.0
 */
import type { KeepCallbackOpen } from "@parley/core/Answer"
import * as Answer from "@parley/core/Answer"
import type * as Callback from "@parley/core/Callback"
import * as Ids from "@parley/core/Ids"
import { AnswerMismatch, InvalidId } from "@parley/core/ParleyError"
import * as ToolSpec from "@parley/core/ToolSpec"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import { type Pipeable, pipeArguments } from "effect/Pipeable"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as ToolAnnotations from "./ToolAnnotations.js"

// =============================================================================
// Models
// =============================================================================

/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = Symbol.for("@parley/tools/ClientTool")

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId

/**
 * The schema of a tool's parameters: decoded and encoded, an object, and needing no services. A `Schema.Struct`
 * (or a `Schema.Class`) fits.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ParametersSchema extends Schema.Schema.AnyNoContext {
  readonly Type: object
  readonly Encoded: object
}

/**
 * The schema of a tool's success value or typed failure: any schema that needs no services.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ResultSchema extends Schema.Schema.AnyNoContext {}

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
   * Answers a call of this tool with `fn`: see `ClientTool.run`.
   */
  run<R = never>(
    callback: Callback.OpenClientToolCall,
    fn: Handler<Schema.Schema.Type<Parameters>, Schema.Schema.Type<Success>, Schema.Schema.Type<Failure>, R>
  ): Effect.Effect<Answer.ClientToolResult | KeepCallbackOpen, never, R>
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

// =============================================================================
// Guards
// =============================================================================

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
  callback._tag === "OpenClientToolCall" && callback.request.tool.id === tool.id

// =============================================================================
// Constructors
// =============================================================================

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    // eslint-disable-next-line prefer-rest-params
    return pipeArguments(this, arguments)
  },
  called(this: Any, callback: Callback.Callback) {
    return called(this, callback)
  },
  run(this: Any, callback: Callback.OpenClientToolCall, fn: Handler<object, unknown, unknown, unknown>) {
    return run(this, callback, fn)
  },
  answer(this: Any, fn: Handler<object, unknown, unknown>) {
    return answer(this, fn)
  }
}

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
>(name: Name, options: Options<P, S, F>): ClientTool<Name, ParametersOf<P>, S, F> => {
  const input: ParametersInput = options.parameters ?? {}
  const parameters = Schema.isSchema(input) ? input : Schema.Struct(input)
  const tool = Object.assign(Object.create(Proto), {
    name,
    id: `client.${name}`,
    description: options.description,
    parameters,
    success: options.success,
    failure: options.failure ?? Schema.String,
    annotations: ToolAnnotations.make(options.annotations)
  })
  return Object.assign(tool, { spec: specOf(tool) })
}

/**
 * Checks the tool's name: its id `client.<name>` must be a valid tool id. Fails with `InvalidId`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = <T extends Any>(tool: T): Effect.Effect<T, InvalidId> =>
  Effect.as(checkedId(tool, "validate"), tool)

const checkedId = (tool: Any, method: string): Effect.Effect<Ids.ToolId, InvalidId> =>
  Effect.mapError(Ids.clientToolId(tool.name), (error) =>
    new InvalidId({
      module: "ClientTool",
      method,
      kind: "toolId",
      value: error.value,
      description: `the tool name ${JSON.stringify(tool.name)} must match ^[A-Za-z0-9][A-Za-z0-9_-]*$`
    }))

// =============================================================================
// JSON Schema
// =============================================================================

const emptyObject: ToolSpec.JsonSchema = { type: "object", properties: {}, required: [], additionalProperties: false }

const isEmptyObject = (ast: SchemaAST.AST): boolean => {
  const encoded = SchemaAST.encodedAST(ast)
  return SchemaAST.isTypeLiteral(encoded) && encoded.propertySignatures.length === 0 &&
    encoded.indexSignatures.length === 0
}

/**
 * The JSON Schema of a schema's encoded side, as a model reads it: no top-level `$ref` (a `Schema.Class` is
 * inlined), nested named schemas under `$defs`, no `$schema` key. An empty struct is `{ type: "object" }` with no
 * properties.
 *
 * @since 0.1.0
 * @category Utils
 */
export const jsonSchema = (schema: Schema.Schema.All): ToolSpec.JsonSchema => {
  if (isEmptyObject(schema.ast)) return { ...emptyObject }
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const root = JSONSchema.fromAST(schema.ast, { definitions, topLevelReferenceStrategy: "skip" })
  return Object.keys(definitions).length === 0 ? { ...root } : { ...root, $defs: definitions }
}

/**
 * The serialisable description of the tool, as an agent definition carries it: id, name, description, the JSON
 * Schemas of parameters, success and failure, and the annotations. Fails with `InvalidId` when the name does not
 * make a valid tool id.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toSpec = (tool: Any): Effect.Effect<ToolSpec.ToolSpec, InvalidId> =>
  Effect.as(checkedId(tool, "toSpec"), specOf(tool))

const specOf = (tool: Omit<Any, "spec">): ToolSpec.ToolSpec =>
  new ToolSpec.ToolSpec({
    id: tool.id as ToolSpec.ToolSpec["id"],
    name: tool.name,
    description: tool.description,
    parameters: jsonSchema(tool.parameters),
    success: jsonSchema(tool.success),
    failure: jsonSchema(tool.failure),
    annotations: tool.annotations
  }, true)

// =============================================================================
// Answering
// =============================================================================

const keep = new Answer.KeepCallbackOpen()

// JSON has no `undefined`: an optional key is reported as "Expected A | B", not "A | B | undefined".
const withoutUndefined = (union: SchemaAST.Union): SchemaAST.AST => {
  const types = union.types.filter((type) => !SchemaAST.isUndefinedKeyword(type))
  return types.length === union.types.length || types.length === 0 ? union : SchemaAST.Union.make(types)
}

// A union that fails is reported as one "Expected A | B, actual x", not once per member.
const collapseUnions = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Composite":
      return SchemaAST.isUnion(issue.ast)
        ? new ParseResult.Type(withoutUndefined(issue.ast), issue.actual)
        : new ParseResult.Composite(
          issue.ast,
          issue.actual,
          "_tag" in issue.issues ? collapseUnions(issue.issues) : Arr.map(issue.issues, collapseUnions),
          issue.output
        )
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, collapseUnions(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, collapseUnions(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, collapseUnions(issue.issue))
    default:
      return issue
  }
}

const describe = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatIssueSync(collapseUnions(error.issue))
    .map((issue) => issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`)
    .join("; ")

const decodeArguments = (tool: Any, value: unknown) =>
  Schema.decodeUnknown(tool.parameters, { errors: "all", onExcessProperty: "ignore" })(value)

const liftResult = <S, F, R>(result: HandlerResult<S, F, R>): Effect.Effect<S | KeepCallbackOpen, F, R> =>
  Effect.isEffect(result) ? result : Effect.succeed(result)

const encodeOutcome = (
  tool: Any,
  outcome: Either.Either<unknown, unknown>
): Effect.Effect<Answer.ClientToolResult | KeepCallbackOpen> => {
  if (Either.isRight(outcome)) {
    if (Answer.isKeepCallbackOpen(outcome.right)) return Effect.succeed(keep)
    return Schema.encode(tool.success)(outcome.right).pipe(
      Effect.map(Answer.ClientToolResult.success),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning(`${tool.id}: the value answered does not match the tool's success schema`, describe(error)),
          Answer.ClientToolResult.failure(`${tool.name} failed: it produced a result that does not match its schema`)
        )
      )
    )
  }
  return Schema.encode(tool.failure)(outcome.left).pipe(
    Effect.map(Answer.ClientToolResult.failure),
    Effect.catchAll((error) =>
      Effect.as(
        Effect.logWarning(
          `${tool.id}: the tool failed with an error its failure schema does not encode`,
          describe(error)
        ),
        Answer.ClientToolResult.failure(`${tool.name} failed`)
      )
    )
  )
}

/**
 * Answers a call of `tool` with `fn`:
 *
 * 1. a callback for another tool is left open (`KeepCallbackOpen`);
 * 2. the arguments are decoded with `parameters` (defaults applied, extra keys dropped); arguments that do not decode
 *    become `ClientToolResult.failure("Invalid arguments for <name>: <path>: <problem>; …")`, a tool error the model
 *    can correct, never a failure of this Effect;
 * 3. `fn(params, callback)` runs; it returns the success value, `KeepCallbackOpen` (returned as is) or an Effect;
 * 4. the success value is encoded with `success` into `ClientToolResult.success(encoded)`, a typed failure with
 *    `failure` into `ClientToolResult.failure(encoded)`. A value the schemas cannot encode (a bug in `fn`) becomes a
 *    generic tool error and a logged warning.
 *
 * The Effect never fails; a defect (a throw) in `fn` stays a defect.
 *
 * @since 0.1.0
 * @category Utils
 */
export const run = <T extends Any, R = never>(
  tool: T,
  callback: Callback.OpenClientToolCall,
  fn: Handler<Parameters<T>, Success<T>, Failure<T>, R>
): Effect.Effect<Answer.ClientToolResult | KeepCallbackOpen, never, R> => {
  if (!called(tool, callback)) return Effect.succeed(keep)
  return Effect.flatMap(
    Effect.either(decodeArguments(tool, callback.request.arguments)),
    (decoded) =>
      Either.isLeft(decoded)
        ? Effect.succeed(
          Answer.ClientToolResult.failure(`Invalid arguments for ${tool.name}: ${describe(decoded.left)}`)
        )
        : Effect.suspend(() => liftResult(fn(decoded.right, callback))).pipe(
          Effect.either,
          Effect.flatMap((outcome) => encodeOutcome(tool, outcome))
        )
  )
}

/**
 * An entry for `answers`: calls of `tool` are answered by running `fn` (see `run`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answer = <T extends Any>(tool: T, fn: Handler<Parameters<T>, Success<T>, Failure<T>>): ToolAnswer => ({
  tool,
  handle: (callback) => run(tool, callback, fn)
})

/**
 * The `clientTool` handler of `CallbackHandler.layer` from tool answers: a call goes to the entries for its tool,
 * in order, and the first that does not keep it open answers. Calls of other tools stay open.
 *
 * @example
 * ```ts
 * const Handlers = CallbackHandler.layer({ clientTool: ClientTool.answers(getLocation.answer(readLocation)) })
 * ```
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answers = (...entries: ReadonlyArray<ToolAnswer>): ClientToolHandler => (callback) =>
  Effect.gen(function*() {
    for (const entry of entries) {
      if (!called(entry.tool, callback)) continue
      const decision = yield* entry.handle(callback)
      if (!Answer.isKeepCallbackOpen(decision)) return decision
    }
    return keep
  })

// =============================================================================
// Checking results
// =============================================================================

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
): Effect.Effect<Answer.ClientToolResult, AnswerMismatch> => {
  const schema = result.isFailure ? tool.failure : tool.success
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(result.result)
  if (Either.isRight(decoded) || (result.isFailure && typeof result.result === "string")) {
    return Effect.succeed(result)
  }
  return Effect.fail(
    new AnswerMismatch({
      module: "ClientTool",
      method: "decodeResult",
      callbackId: callbackId ?? `(a call of ${tool.id})`,
      reason: `the ${result.isFailure ? "failure" : "success"} result does not match the ${
        result.isFailure ? "failure" : "success"
      } schema of ${tool.id}: ${describe(decoded.left)}`
    })
  )
}
