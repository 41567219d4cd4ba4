/**
 * The machinery of `ScriptedModel`: the recorded state, the `LanguageModel` built on it, and the rendering of a
 * `Reply` as `@effect/ai` response parts (whole for `generateText`, streamed word by word for `streamText`).
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
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
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** The calls that went beyond the script, as built by `makeWith`'s `unexpected`. */
  readonly unexpected: Effect.Effect<ReadonlyArray<Unexpected>>
}

interface State<Unexpected> {
  readonly calls: ReadonlyArray<Call>
  readonly unexpected: ReadonlyArray<Unexpected>
  readonly nextToolCallId: number
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
    const state = yield* Ref.make<State<Unexpected>>({ calls: [], unexpected: [], nextToolCallId: 1 })

    const respond = (
      options: LanguageModel.ProviderOptions,
      method: Call["method"]
    ): Effect.Effect<RenderedReply, AiError.AiError> =>
      Effect.gen(function*() {
        const tools = yield* describeTools(options.tools, method)
        const [call, taken] = yield* Ref.modify(
          state,
          (current): [readonly [Call, { readonly step: Step } | Unexpected], State<Unexpected>] => {
            const call: Call = {
              index: current.calls.length,
              method,
              prompt: options.prompt,
              tools,
              toolChoice: options.toolChoice,
              responseFormat: options.responseFormat
            }
            const calls = [...current.calls, call]
            const step = script.step(call.index)
            if (step === undefined) {
              const error = unexpected(call)
              return [[call, error], { ...current, calls, unexpected: [...current.unexpected, error] }]
            }
            return [[call, { step }], { ...current, calls }]
          }
        )
        if (taken instanceof Error) {
          return yield* new AiError.UnknownError({ module: MODULE, method, description: taken.message, cause: taken })
        }
        const answer = yield* runStep(taken.step, call)
        const toolCallIds = yield* Ref.modify(state, (current): [ReadonlyArray<string>, State<Unexpected>] => {
          let next = current.nextToolCallId
          const ids = (answer.toolCalls ?? []).map((toolCall) => toolCall.id ?? `call_${next++}`)
          return [ids, { ...current, nextToolCallId: next }]
        })
        return { reply: answer, toolCallIds, call }
      })

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
      calls: Effect.map(Ref.get(state), (current) => current.calls),
      unexpected: Effect.map(Ref.get(state), (current) => current.unexpected)
    }
  })

const runStep = (step: Step, call: Call): Effect.Effect<Reply, AiError.AiError> =>
  typeof step === "function"
    ? Effect.suspend(() => {
      const result = step(call)
      return Effect.isEffect(result) ? result : Effect.succeed(result)
    })
    : Effect.succeed(step)

const describeTools = (
  tools: ReadonlyArray<Tool.Any>,
  method: Call["method"]
): Effect.Effect<ReadonlyArray<ToolDescription>, AiError.AiError> =>
  Effect.try({
    try: () =>
      tools.map((tool) => ({
        name: tool.name,
        description: tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast),
        parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast)
      })),
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
