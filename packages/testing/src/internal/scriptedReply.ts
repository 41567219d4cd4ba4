/**
 * How `ScriptedModel` renders a `Reply` as `effect/ai`'s encoded response parts — whole for `generateText`, word by
 * word for `streamText`, with a finish part whose usage counts words — and reads its calls' prompts back
 * (`lastUserText`, `toolResults`).
 */
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import type { Call, Reply, ToolResult } from "../ScriptedModel.js"

export interface RenderedReply {
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
    usage: { inputTokens: { total: inputTokens }, outputTokens: { total: outputTokens } }
  }
}

export const toParts = (rendered: RenderedReply): Array<Response.PartEncoded> => [
  metadataPart(rendered),
  ...(hasText(rendered) ? [{ type: "text" as const, text: rendered.reply.text ?? "" }] : []),
  ...toolCallParts(rendered),
  finishPart(rendered)
]

/**
 * The streamed parts, in chunks as `LanguageModel.make` decodes them: the metadata and the text (`text-start`, one
 * `text-delta` per word, `text-end`) in one chunk, each tool call in a chunk of its own (a call the toolkit refuses
 * fails the stream after the parts before it, as a provider's would), the `finish` part last.
 */
export const toStreamChunks = (
  rendered: RenderedReply
): Array<ReadonlyArray<Response.StreamPartEncoded>> => {
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
  return [
    [metadataPart(rendered), ...textParts],
    ...toolCallParts(rendered).map((part) => [part]),
    [finishPart(rendered)]
  ]
}

/** The text of the last user message of the call's prompt (`ScriptedModel.lastUserText`). */
export const lastUserText = (call: Call): string | undefined => {
  for (let i = call.prompt.content.length - 1; i >= 0; i--) {
    const message = call.prompt.content[i]
    if (message.role === "user") {
      return message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
    }
  }
  return undefined
}

/** Every tool result in the call's prompt, in order (`ScriptedModel.toolResults`). */
export const toolResults = (call: Call): ReadonlyArray<ToolResult> =>
  call.prompt.content.flatMap((message) =>
    message.role === "tool" || message.role === "assistant"
      ? message.content.flatMap((part) =>
        part.type === "tool-result"
          ? [{ id: part.id, name: part.name, isFailure: part.isFailure, result: part.result }]
          : []
      )
      : []
  )
