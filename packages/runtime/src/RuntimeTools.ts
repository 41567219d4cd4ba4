/**
 * Tools the runtime runs: handlers of the program's tools (`client.<name>`) given to the engine, so their calls are
 * answered inside the runtime — with no client waiting on the turn, as a deployed agent needs.
 *
 * A tool answered by the program (the default) opens an `OpenClientToolCall` callback: a handler answers it while a
 * run waits (`Tool.handlers`, `CallbackHandler.layer`), or the program answers it by id. A tool whose handler is
 * given to the runtime instead (`RuntimeTools.layer(tool)`) never opens a callback: once the permission policy allows
 * the call (an `ask` policy still opens its approval first), the engine that owns the tree records
 * `ToolExecutionStarted` under its lease, runs the handler and records `ToolCallCompleted`; an approval answered in
 * another process is carried out by the owner when it reads the answer. An app that only follows `Turn.events` sees its turns complete.
 *
 * When a session starts, the engine marks every tool of the agent (and of its subagents) that has a handler here as
 * `runsIn: "runtime"` in the stored definition, so every process deciding over the tree agrees on where the tool
 * runs. A process without the handler that has to run such a call reports a failure result saying so to the model.
 *
 * The handler runs as it does for a client: the model's arguments are decoded with the tool's `parameters` schema
 * (arguments that do not decode are a tool error for the model), the result is encoded with its `success` schema,
 * and a typed failure with its `failure` schema — a failure the model sees, not the end of the turn. A defect ends
 * the turn `Failed`. A handler that returns `KeepCallbackOpen` gives a failure result (nobody else can answer).
 * After a restart, a call that started and has no result is reported to the model as interrupted, unless the tool
 * is idempotent (`annotations: ToolAnnotations.idempotent`): then it runs again. The engine begins a handler only while
 * its lease on the tree holds by the clock; the one window left (a pause right as the handler begins, outlasting the
 * lease) is closed by passing the call's `callback.request.toolCallId` — the same across steps issued again and
 * recoveries — to the backend as its idempotency key: the effect then happens once.
 *
 * @example
 * ```ts
 * import { Agent } from "@parley/core"
 * import { LocalTransport, RuntimeTools } from "@parley/runtime"
 * import { Tool } from "@parley/tools"
 * import { Effect, Schema } from "effect"
 *
 * const lookupPrice = Tool.make("lookup_price", {
 *   description: "Price of one product.",
 *   parameters: { product: Schema.String },
 *   success: Schema.Struct({ price: Schema.String })
 * }, ({ product }) => Effect.succeed({ price: product === "Atlas" ? "1,200 EUR" : "unknown" }))
 *
 * const shop = Agent.make({ name: "shop", instructions: "Look up prices.", tools: [lookupPrice] })
 *
 * // the runtime answers lookup_price itself: no handler has to wait on the turn
 * const Runtime = LocalTransport.layerMemory({ tools: [lookupPrice] })
 * // or, for a hand-built runtime
 * const Tools = RuntimeTools.layer(lookupPrice)
 * ```
 *
 * @since 0.1.0
 */
import type * as Answer from "@parley/core/Answer"
import type * as Callback from "@parley/core/Callback"
import * as ClientTool from "@parley/tools/ClientTool"
import type * as Tool from "@parley/tools/Tool"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/**
 * Runs one call of a tool: the call in (its arguments as the model gave them), the encoded result out, or
 * `KeepCallbackOpen` when no handler answered.
 *
 * @since 0.1.0
 * @category Models
 */
export type Handler = (
  call: Callback.OpenClientToolCall
) => Effect.Effect<Answer.ClientToolResult | Answer.KeepCallbackOpen>

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The handler of the tool with this id (`client.<name>`), if the runtime was given one. */
  readonly get: (toolId: string) => Option.Option<Handler>
}

/**
 * The handlers of the tools the runtime runs.
 *
 * @since 0.1.0
 * @category Context
 */
export class RuntimeTools extends Context.Service<RuntimeTools, Service>()("@parley/runtime/RuntimeTools") {}

/**
 * What the runtime can be given: a tool with its handler (`Tool.make`), or a client tool with the code that answers
 * it (`clientTool.answer(fn)`, for code built where its services are at hand).
 *
 * @since 0.1.0
 * @category Models
 */
export type Entry = Tool.Any | ClientTool.ToolAnswer

const answerOf = (entry: Entry): ClientTool.ToolAnswer =>
  ClientTool.isClientTool(entry) ? ClientTool.answer(entry, entry.handler) : entry

/**
 * The service from tools and answers. The calls of one tool go to its entries in order; the first that does not
 * keep the call open answers (see `ClientTool.answers`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (...entries: ReadonlyArray<Entry>): Service => {
  const byId = new Map<string, Array<ClientTool.ToolAnswer>>()
  for (const entry of entries.map(answerOf)) {
    const same = byId.get(entry.tool.id)
    if (same === undefined) byId.set(entry.tool.id, [entry])
    else same.push(entry)
  }
  const handlers = new Map<string, Handler>(
    [...byId].map(([id, answers]) => [id, ClientTool.answers(...answers)])
  )
  return { get: (toolId) => Option.fromNullishOr(handlers.get(toolId)) }
}

/**
 * The runtime runs these tools: a session started afterwards has their calls answered by the engine.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (...entries: ReadonlyArray<Entry>): Layer.Layer<RuntimeTools> =>
  Layer.succeed(RuntimeTools, make(...entries))

/**
 * No tools run in the runtime: every tool of the program is answered by the program.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerEmpty: Layer.Layer<RuntimeTools> = layer()
