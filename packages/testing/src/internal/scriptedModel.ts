/**
 * The machinery of `ScriptedModel`: the recorded state, the `LanguageModel` built on it, and the rendering of a
 * `Reply` as `@effect/ai` response parts (whole for `generateText`, streamed word by word for `streamText`).
 *
 * Work per call is O(1) in the number of calls so far: the recorded calls are appended to (never copied), and the
 * JSON Schema of a tool is built once per tool object.
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Call, Reply, Step, ToolDescription } from "../ScriptedModel.js"

/** Where a scripted model gets its steps. */
export interface Script {
  /** Number of steps, or `undefined` for an unlimited brain. */
  readonly size: number | undefined
  readonly step: (index: number) => Step | undefined
}

/** A model that records its calls; the public module turns `unexpected` and `size` into `assertComplete`. */
export interface Recording<Unexpected extends Error> {
  readonly languageModel: LanguageModel.Service
  /** A copy of the calls so far (later calls do not change it). */
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** The calls that went beyond the script, as built by `makeWith`'s `unexpected`. */
  readonly unexpected: Effect.Effect<ReadonlyArray<Unexpected>>
}

/** What a call is answered from: the provider options of `LanguageModel.make`, without the span. */
interface Request {
  readonly prompt: Prompt.Prompt
  readonly tools: ReadonlyArray<Tool.Any>
  readonly toolChoice: LanguageModel.ToolChoice<string>
  readonly responseFormat: LanguageModel.ProviderOptions["responseFormat"]
}

const MODULE = "ScriptedModel"

/**
 * Builds a recording `LanguageModel` on `script`. A call beyond the script is recorded, described by `unexpected`
 * and fails with an `AiError.UnknownError` whose `cause` is that description.
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

    const respond = (request: Request, method: Call["method"]): Effect.Effect<RenderedReply, AiError.AiError> =>
      Effect.flatMap(describeTools(request.tools, method), (tools) =>
        Effect.suspend(() => {
          const call: Call = {
            index: calls.length,
            method,
            prompt: request.prompt,
            tools,
            toolChoice: request.toolChoice,
            responseFormat: request.responseFormat
          }
          calls.push(call)
          const step = script.step(call.index)
          if (step === undefined) {
            const error = unexpected(call)
            beyond.push(error)
            return Effect.fail(
              new AiError.UnknownError({ module: MODULE, method, description: error.message, cause: error })
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
          Effect.map(
            respond(options, "streamText"),
            (rendered) => Stream.fromChunks(...toStreamParts(rendered).map(Chunk.of))
          )
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
    description: tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast),
    parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast)
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
    catch: (cause) =>
      new AiError.MalformedInput({
        module: MODULE,
        method,
        description: "a tool's parameters could not be converted to JSON Schema",
        cause
      })
  })

// =============================================================================
// Rendering
// =============================================================================

interface RenderedReply {
  readonly call: Call
  readonly reply: Reply
  readonly toolCallIds: ReadonlyArray<string>
}

/** Splits text into word-sized deltas (each word with its surrounding whitespace); they concatenate to the text. */
const splitWords = (text: string): ReadonlyArray<string> => text.match(/\s*\S+\s*/g) ?? [text]

const countWords = (text: string): number => text.match(/\S+/g)?.length ?? 0

const promptWords = (prompt: Prompt.Prompt): number =>
  prompt.content.reduce((total, message) => {
    if (message.role === "system") {
      return total + countWords(message.content)
    }
    return message.content.reduce(
      (sum, part) => part.type === "text" || part.type === "reasoning" ? sum + countWords(part.text) : sum,
      total
    )
  }, 0)

const hasText = (rendered: RenderedReply): boolean =>
  rendered.reply.text !== undefined && rendered.reply.text.length > 0

const metadataPart = (rendered: RenderedReply): Response.ResponseMetadataPartEncoded => ({
  type: "response-metadata",
  id: `resp_${rendered.call.index + 1}`,
  modelId: "scripted-model"
})

const toolCallParts = (rendered: RenderedReply): Array<Response.ToolCallPartEncoded> =>
  (rendered.reply.toolCalls ?? []).map((toolCall, i) => ({
    type: "tool-call",
    id: rendered.toolCallIds[i],
    name: toolCall.name,
    params: toolCall.params
  }))

const finishPart = (rendered: RenderedReply): Response.FinishPartEncoded => {
  const toolCalls = rendered.reply.toolCalls ?? []
  const inputTokens = promptWords(rendered.call.prompt)
  const outputTokens = countWords(rendered.reply.text ?? "") + toolCalls.length
  return {
    type: "finish",
    reason: toolCalls.length > 0 ? "tool-calls" : "stop",
    usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }
  }
}

const toParts = (rendered: RenderedReply): Array<Response.PartEncoded> => [
  metadataPart(rendered),
  ...(hasText(rendered) ? [{ type: "text" as const, text: rendered.reply.text ?? "" }] : []),
  ...toolCallParts(rendered),
  finishPart(rendered)
]

const toStreamParts = (rendered: RenderedReply): Array<Response.StreamPartEncoded> => {
  const id = `text_${rendered.call.index + 1}`
  const textParts: Array<Response.StreamPartEncoded> = hasText(rendered)
    ? [
      { type: "text-start", id },
      ...splitWords(rendered.reply.text ?? "").map((delta): Response.StreamPartEncoded => ({
        type: "text-delta",
        id,
        delta
      })),
      { type: "text-end", id }
    ]
    : []
  return [metadataPart(rendered), ...textParts, ...toolCallParts(rendered), finishPart(rendered)]
}
