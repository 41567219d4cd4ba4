/**
 * Tools with a handler: a client tool (same id `client.<name>`, same `OpenClientToolCall` callbacks) that carries
 * the code answering it. `Tool.handlers(...)` (or `Tool.layer(...)`) answers the calls of these tools by running
 * their handlers, so a program that waits (`Agent.run`, `Session.run`, `Turn.result`) answers them automatically;
 * calls left open (`KeepCallbackOpen`) come back in `Blocked` and can be answered by id like any client tool call.
 *
 * The same tool can run in the runtime instead: given to `RuntimeTools.layer(tool)` (or
 * `LocalTransport.layerMemory({ tools })`) of `@parley/runtime`, its handler runs inside the engine for every session
 * started afterwards — no callback opens and no client has to wait, as a deployed agent needs; a client's own handler
 * for it is then never asked. Arguments are decoded and results encoded the same way in both places.
 *
 * A handler needs no services (`R = never`). For a handler that uses services, define a `ClientTool` and build the
 * handler record with `CallbackHandler.layerEffect` (or, for the runtime, `RuntimeTools.layer(tool.answer(fn))` with
 * `fn` built where the services are at hand).
 *
 * @example
 * ```ts
 * import { CallbackHandler } from "@parley/core"
 * import { Tool, ToolAnnotations } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * const getLocation = Tool.make(
 *   "get_location",
 *   {
 *     description: "The user's current location.",
 *     parameters: { precision: Schema.Literals(["city", "street"]).pipe(Schema.withDecodingDefault(Effect.succeed("city" as const))) },
 *     success: Schema.Struct({ city: Schema.String, country: Schema.String }),
 *     annotations: ToolAnnotations.readOnly
 *   },
 *   ({ precision }) =>
 *     precision === "city"
 *       ? Effect.succeed({ city: "Lyon", country: "France" })
 *       : Effect.fail("street precision is not available")
 * )
 *
 * // the handlers answer get_location while a run waits; approvals and sign-ins compose in the same list
 * const Handlers = CallbackHandler.layer([Tool.handlers(getLocation), CallbackHandler.allowReadOnly])
 * ```
 *
 * @since 0.1.0
 */
import type * as Callback from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as ClientTool from "./ClientTool.js"

/**
 * A client tool and its handler.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Tool<
  Name extends string,
  Parameters extends ClientTool.ParametersSchema,
  Success extends ClientTool.ResultSchema,
  Failure extends ClientTool.ResultSchema
> extends ClientTool.ClientTool<Name, Parameters, Success, Failure> {
  /**
   * The tool's code: the decoded parameters in; the success value, `KeepCallbackOpen` or an Effect out. The second
   * argument is the call's `OpenClientToolCall`; when the runtime runs the tool, it describes the call in the same
   * shape, but no callback was opened (its id answers nothing, and it has no deadline), and `KeepCallbackOpen` is a
   * failure result, since no one else answers.
   */
  handler(
    params: Schema.Schema.Type<Parameters>,
    callback: Callback.OpenClientToolCall
  ): ClientTool.HandlerResult<Schema.Schema.Type<Success>, Schema.Schema.Type<Failure>>
  /** Answers this tool's calls with `handler`: an agent carrying the tool answers them whenever a run waits. */
  readonly callbackHandler: CallbackHandler.Service
}

/**
 * Any tool with a handler.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Any
  extends Tool<string, ClientTool.ParametersSchema, ClientTool.ResultSchema, ClientTool.ResultSchema>
{}

/**
 * Defines a client tool with its handler. The options are those of `ClientTool.make`; `handler` gets the decoded
 * parameters and returns the success value (plain or as an Effect whose typed failure is the tool's failure), or
 * `KeepCallbackOpen`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = <
  const Name extends string,
  S extends ClientTool.ResultSchema,
  P extends ClientTool.ParametersInput = {},
  F extends ClientTool.ResultSchema = typeof Schema.String
>(
  name: Name,
  options: ClientTool.Options<P, S, F> & {
    /** The name its answers are recorded with (`answeredBy: Handler { name }`); default: the tool's name. */
    readonly handlerName?: string | undefined
  },
  handler: ClientTool.Handler<
    Schema.Schema.Type<ClientTool.ParametersOf<P>>,
    Schema.Schema.Type<S>,
    Schema.Schema.Type<F>
  >
): Tool<Name, ClientTool.ParametersOf<P>, S, F> => {
  const { handlerName, ...definition } = options
  const tool = ClientTool.make(name, definition as ClientTool.Options<P, S, F>)
  return Object.assign(tool, {
    handler,
    callbackHandler: CallbackHandler.named(handlerName ?? name, {
      clientTool: ClientTool.answers(ClientTool.answer(tool, handler))
    })
  })
}

/**
 * The handler record that answers the calls of these tools by running their handlers (through `ClientTool.run`:
 * bad arguments become tool errors). Calls of other tools stay open. Composes with other handlers in
 * `CallbackHandler.layer([...])`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const handlers = (...tools: ReadonlyArray<Any>): CallbackHandler.Handlers => ({
  clientTool: ClientTool.answers(...tools.map((tool) => ClientTool.answer(tool, tool.handler)))
})

/**
 * The `CallbackHandler` layer that answers the calls of these tools (and leaves every other callback open).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (...tools: ReadonlyArray<Any>): Layer.Layer<CallbackHandler.CallbackHandler> =>
  CallbackHandler.layer(handlers(...tools))
