/**
 * The machinery of `ScriptedModel`: the recorded state and the `LanguageModel` built on it with `LanguageModel.make`
 * (the rendering of a `Reply` as `effect/ai` response parts is `scriptedReply.ts`).
 *
 * Work per call is O(1) in the number of calls so far: the recorded calls are appended to (never copied), and the
 * JSON Schema of a tool is built once per tool object. `LanguageModel.make` prepares the provider options (prompt,
 * tools after `toolChoice`, response format, span), decodes the encoded parts against the request's toolkit (its
 * decoders kept per model) and resolves tool calls when the caller asks it to.
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Tool from "effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Call, Reply, Step, ToolDescription } from "../ScriptedModel.js"
import { type RenderedReply, toParts, toStreamChunks } from "./scriptedReply.js"

/** Where a scripted model gets its steps. */
export interface Script {
  /** Number of steps, or `undefined` for an unlimited brain. */
  readonly size: number | undefined
  readonly step: (index: number) => Step | undefined
  /** Whether the calls are kept (`calls`); a brain for a program that runs for long keeps none. */
  readonly record: boolean
}

/** A model that records its calls; the public module turns `unexpected` and `size` into `assertComplete`. */
export interface Recording<Unexpected extends Error> {
  readonly languageModel: LanguageModel.LanguageModel
  /** A copy of the calls so far (later calls do not change it). */
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** The calls that went beyond the script, as built by `makeWith`'s `unexpected`. */
  readonly unexpected: Effect.Effect<ReadonlyArray<Unexpected>>
}

const MODULE = "ScriptedModel"

/**
 * Builds a recording `LanguageModel` on `script`. A call beyond the script is recorded, described by `unexpected`
 * and fails with an `AiError` whose reason is an `UnknownError` with that description's message.
 */
export const makeWith = <Unexpected extends Error>(
  script: Script,
  unexpected: (call: Call) => Unexpected
): Effect.Effect<Recording<Unexpected>> =>
  Effect.gen(function*() {
    // Mutated only inside `Effect.suspend`, one call at a time: appends, no copies.
    const calls: Array<Call> = []
    const beyond: Array<Unexpected> = []
    let nextToolCallId = 1
    let nextIndex = 0

    const respond = (
      options: LanguageModel.ProviderOptions,
      method: Call["method"]
    ): Effect.Effect<RenderedReply, AiError.AiError> =>
      Effect.flatMap(describeTools(options.tools, method), (tools) =>
        Effect.suspend(() => {
          const call: Call = {
            index: nextIndex++,
            method,
            prompt: options.prompt,
            tools,
            toolChoice: options.toolChoice,
            responseFormat: options.responseFormat
          }
          if (script.record) calls.push(call)
          const step = script.step(call.index)
          if (step === undefined) {
            const error = unexpected(call)
            beyond.push(error)
            return Effect.fail(
              AiError.make({
                module: MODULE,
                method,
                reason: new AiError.UnknownError({ description: error.message })
              })
            )
          }
          return Effect.map(runStep(step, call), (reply): RenderedReply => ({
            reply,
            toolCallIds: (reply.toolCalls ?? []).map((toolCall) => toolCall.id ?? `call_${nextToolCallId++}`),
            call
          }))
        }))

    const languageModel = yield* LanguageModel.make({
      generateText: (options) => Effect.map(respond(options, "generateText"), toParts),
      streamText: (options) =>
        Stream.unwrap(
          Effect.map(respond(options, "streamText"), (rendered) => Stream.fromArrays(...toStreamChunks(rendered)))
        )
    })

    return {
      languageModel,
      calls: Effect.sync(() => calls.slice()),
      unexpected: Effect.sync(() => beyond.slice())
    }
  })

const runStep = (step: Step, call: Call): Effect.Effect<Reply, AiError.AiError> =>
  typeof step === "function"
    ? Effect.suspend(() => {
      const result = step(call)
      return Effect.isEffect(result) ? result : Effect.succeed(result)
    })
    : Effect.succeed(step)

// =============================================================================
// Tools as the model sees them (JSON Schema built once per tool)
// =============================================================================

const descriptions = new WeakMap<Tool.Any, ToolDescription>()

const describeTool = (tool: Tool.Any): ToolDescription => {
  const cached = descriptions.get(tool)
  if (cached !== undefined) return cached
  const description: ToolDescription = {
    name: tool.name,
    description: Tool.getDescription(tool),
    parameters: Tool.getJsonSchema(tool)
  }
  descriptions.set(tool, description)
  return description
}

const describeTools = (
  tools: ReadonlyArray<Tool.Any>,
  method: Call["method"]
): Effect.Effect<ReadonlyArray<ToolDescription>, AiError.AiError> =>
  Effect.try({
    try: () => tools.map(describeTool),
    catch: () =>
      AiError.make({
        module: MODULE,
        method,
        reason: new AiError.UnsupportedSchemaError({
          description: "a tool's parameters could not be converted to JSON Schema"
        })
      })
  })
