/**
 * A deterministic, offline `effect/ai` `LanguageModel` for tests and for the "brains" of example programs.
 *
 * `ScriptedModel.make(steps)` builds a real `LanguageModel.LanguageModel` service with `LanguageModel.make`. Every
 * model call (`generateText`, `generateObject` or `streamText`) is recorded with the prompt and the tools it got, and
 * consumes the next step of the script. A step is a `Reply` (text and / or tool calls) or a function of the recorded
 * call, so a step can answer from the conversation so far (for example from a tool result in the prompt).
 *
 * Streaming is first-class: a text reply is streamed as `text-start`, one `text-delta` per word and `text-end`; tool
 * calls are `tool-call` parts with deterministic ids (`call_1`, `call_2`, … unless the step names one); every reply
 * ends with a `finish` part (`tool-calls` or `stop`, with word-count usage).
 *
 * The parts are decoded against the request's toolkit by `LanguageModel.make`, as a provider's are (an unknown tool or
 * invalid params fail with an `AiError` whose reason is an `InvalidOutputError`).
 *
 * A call beyond the script fails with an `AiError` (reason `UnknownError`) and is remembered, and `assertComplete`
 * fails with `UnexpectedModelCall` or `UnconsumedModelSteps`, so a test fails if the model was not driven the way it
 * claims. `ScriptedModel.fromFunction(brain)` is the unlimited variant for example programs.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "effect/ai"
 * import { ScriptedModel } from "@parley/testing"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* LanguageModel.generateText({ prompt: "What is the weather in Paris?" })
 *   const second = yield* LanguageModel.generateText({ prompt: "Thanks!" })
 *   console.log(first.text, second.text) // "Sunny, 21°C." "You're welcome."
 *   yield* ScriptedModel.assertComplete
 *   const calls = yield* ScriptedModel.calls
 *   console.log(ScriptedModel.lastUserText(calls[1])) // "Thanks!"
 * }).pipe(
 *   Effect.provide(ScriptedModel.layer([
 *     ScriptedModel.text("Sunny, 21°C."),
 *     (call) => ScriptedModel.text(ScriptedModel.lastUserText(call) === "Thanks!" ? "You're welcome." : "Pardon?")
 *   ]))
 * )
 * ```
 *
 * @since 0.1.0
 */
import type * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Internal from "./internal/scriptedModel.js"
import * as Rendering from "./internal/scriptedReply.js"

// =============================================================================
// Models
// =============================================================================

/**
 * One tool call the scripted model makes. Without an `id`, the model generates `call_1`, `call_2`, … (one counter per
 * model, so ids stay unique across the whole conversation).
 *
 * The `params` are the encoded parameters, checked by `effect/ai` against the tool's parameters schema, and the tool
 * must be in the toolkit of the request: an unknown tool or invalid params make the model call fail with an `AiError`
 * whose reason is an `InvalidOutputError`, as they would with a real provider.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolCall {
  readonly name: string
  readonly params: unknown
  readonly id?: string | undefined
}

/**
 * What the scripted model answers to one call: some text, some tool calls, or both (text first).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Reply {
  readonly text?: string | undefined
  readonly toolCalls?: ReadonlyArray<ToolCall> | undefined
}

/**
 * A tool as the model saw it in a call: its name, description and parameters as JSON Schema.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolDescription {
  readonly name: string
  readonly description: string | undefined
  readonly parameters: JsonSchema.JsonSchema
}

/**
 * A tool result found in a call's prompt (from a `tool` message, or a provider-executed result in an `assistant`
 * message).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolResult {
  readonly id: string
  readonly name: string
  readonly isFailure: boolean
  readonly result: unknown
}

/**
 * One recorded model call.
 *
 * - `index`: zero-based position among all calls to this model (the error messages count from 1).
 * - `method`: `"streamText"` for `LanguageModel.streamText`, `"generateText"` for `generateText` and `generateObject`.
 * - `prompt`: the prompt the model got.
 * - `tools`: the tools of the request after `toolChoice` filtering, parameters as JSON Schema.
 * - `toolChoice`: as passed by the caller (`"none"` when the request had no toolkit).
 * - `responseFormat`: `{ type: "json", … }` for `generateObject`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Call {
  readonly index: number
  readonly method: "generateText" | "streamText"
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<ToolDescription>
  readonly toolChoice: LanguageModel.ToolChoice<string>
  readonly responseFormat: LanguageModel.ProviderOptions["responseFormat"]
}

/**
 * A step of the script: a fixed `Reply`, or a function that decides from the recorded call. A function step may fail
 * with an `AiError`, which fails that model call.
 *
 * @since 0.1.0
 * @category Models
 */
export type Step = Reply | ((call: Call) => Reply | Effect.Effect<Reply, AiError.AiError>)

/**
 * The handle of a scripted model.
 *
 * - `languageModel`: the `LanguageModel` service.
 * - `calls`: every call so far, in order (unexpected ones included), as a copy that later calls leave unchanged.
 * - `assertComplete`: fails with `UnexpectedModelCall` if a call went beyond the script, else with
 *   `UnconsumedModelSteps` if steps are left. Always succeeds for `fromFunction`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly languageModel: LanguageModel.LanguageModel
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  readonly assertComplete: Effect.Effect<void, UnexpectedModelCall | UnconsumedModelSteps>
}

/**
 * The tag of the scripted model's handle; `layer` and `layerFunction` provide it together with
 * `LanguageModel.LanguageModel`.
 *
 * @since 0.1.0
 * @category Models
 */
export class ScriptedModel extends Context.Service<ScriptedModel, Service>()("@parley/testing/ScriptedModel") {}

// =============================================================================
// Errors
// =============================================================================

/**
 * A model call arrived after the script was used up. The call itself failed with an `AiError` whose reason is an
 * `UnknownError` with this error's message; `assertComplete` reports it afterwards, in case the program swallowed the
 * model failure.
 *
 * @since 0.1.0
 * @category Errors
 */
export class UnexpectedModelCall extends Data.TaggedError("UnexpectedModelCall")<{
  /** Zero-based index of the call. */
  readonly index: number
  readonly method: "generateText" | "streamText"
  /** Number of steps in the script. */
  readonly steps: number
  readonly lastUserText: string | undefined
}> {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const userText = this.lastUserText === undefined ? "no user message" : JSON.stringify(this.lastUserText)
    return `unexpected model call #${this.index + 1}: the script has ${this.steps} step${
      this.steps === 1 ? "" : "s"
    } (${this.method}, last user text: ${userText})`
  }
}

/**
 * The script still had steps when `assertComplete` ran.
 *
 * @since 0.1.0
 * @category Errors
 */
export class UnconsumedModelSteps extends Data.TaggedError("UnconsumedModelSteps")<{
  /** Steps never consumed. */
  readonly remaining: number
  /** Number of steps in the script. */
  readonly steps: number
}> {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.remaining} of ${this.steps} scripted model step${this.steps === 1 ? " was" : "s were"} not consumed`
  }
}

// =============================================================================
// Constructors
// =============================================================================

/**
 * A reply with only text.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const text = (text: string): Reply => ({ text })

/**
 * A reply with one tool call. Without `id`, the model generates one (`call_N`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const toolCall = (name: string, params: unknown, id?: string): Reply => ({
  toolCalls: [id === undefined ? { name, params } : { name, params, id }]
})

/**
 * A reply with text and / or tool calls.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const reply = (options: {
  readonly text?: string | undefined
  readonly toolCalls?: ReadonlyArray<ToolCall> | undefined
}): Reply => ({ text: options.text, toolCalls: options.toolCalls })

/**
 * A scripted model: each call consumes the next step; a call beyond the script fails with an `AiError` (reason
 * `UnknownError`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (steps: ReadonlyArray<Step>): Effect.Effect<Service> =>
  fromScript({ size: steps.length, step: (index) => steps[index], record: true })

/**
 * Options of `fromFunction`: `record: false` keeps no call (`calls` stays empty; each call still has its `index`), for
 * a program that runs for long (a server, a benchmark), whose memory must not grow with its calls. Default `true`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface FunctionOptions {
  readonly record?: boolean | undefined
}

/**
 * A model driven by one function, for any number of calls (for example programs). `assertComplete` always succeeds.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fromFunction = (
  brain: (call: Call) => Reply | Effect.Effect<Reply, AiError.AiError>,
  options?: FunctionOptions
): Effect.Effect<Service> => fromScript({ size: undefined, step: () => brain, record: options?.record ?? true })

const fromScript = (script: Internal.Script): Effect.Effect<Service> =>
  Effect.map(
    Internal.makeWith(script, (call) =>
      new UnexpectedModelCall({
        index: call.index,
        method: call.method,
        steps: script.size ?? 0,
        lastUserText: lastUserText(call)
      })),
    (recording): Service => ({
      languageModel: recording.languageModel,
      calls: recording.calls,
      assertComplete: Effect.flatMap(
        Effect.zip(recording.unexpected, recording.calls),
        ([unexpected, calls]): Effect.Effect<void, UnexpectedModelCall | UnconsumedModelSteps> => {
          if (unexpected.length > 0) return Effect.fail(unexpected[0])
          if (script.size !== undefined && calls.length < script.size) {
            return Effect.fail(new UnconsumedModelSteps({ remaining: script.size - calls.length, steps: script.size }))
          }
          return Effect.void
        }
      )
    })
  )

// =============================================================================
// Layers
// =============================================================================

const toContext = (model: Service): Context.Context<LanguageModel.LanguageModel | ScriptedModel> =>
  Context.make(ScriptedModel, model).pipe(Context.add(LanguageModel.LanguageModel, model.languageModel))

/**
 * Provides `LanguageModel.LanguageModel` (and the `ScriptedModel` handle) from a script.
 *
 * The position in the script lives in this process's memory: a turn paused here and resumed by another process (a
 * restart, a worker answering by id over the same store) starts the script again from its first step there. For turns
 * that cross processes, use `layerFunction` (or `fromFunction`): a brain decides from the conversation, not from a count.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (steps: ReadonlyArray<Step>): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel> =>
  Layer.effectContext(Effect.map(make(steps), toContext))

/**
 * Provides `LanguageModel.LanguageModel` (and the `ScriptedModel` handle) from a brain function. It decides each reply
 * from the call (the prompt so far, the tool results), so a turn resumed in another process goes on where it stopped.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerFunction = (
  brain: (call: Call) => Reply | Effect.Effect<Reply, AiError.AiError>,
  options?: FunctionOptions
): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel> =>
  Layer.effectContext(Effect.map(fromFunction(brain, options), toContext))

// =============================================================================
// Accessors
// =============================================================================

/**
 * Every call the provided scripted model received so far.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const calls: Effect.Effect<ReadonlyArray<Call>, never, ScriptedModel> = Effect.flatMap(
  ScriptedModel,
  (model) => model.calls
)

/**
 * Checks that the provided scripted model consumed its whole script and got no call beyond it.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const assertComplete: Effect.Effect<void, UnexpectedModelCall | UnconsumedModelSteps, ScriptedModel> = Effect
  .flatMap(ScriptedModel, (model) => model.assertComplete)

// =============================================================================
// Utils
// =============================================================================

/**
 * The text of the last user message of the call's prompt, or `undefined` when it has none.
 *
 * @since 0.1.0
 * @category Utils
 */
export const lastUserText: (call: Call) => string | undefined = Rendering.lastUserText

/**
 * Every tool result in the call's prompt, in order.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toolResults: (call: Call) => ReadonlyArray<ToolResult> = Rendering.toolResults

/**
 * The names of the tools offered in the call.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toolNames = (call: Call): ReadonlyArray<string> => call.tools.map((tool) => tool.name)
