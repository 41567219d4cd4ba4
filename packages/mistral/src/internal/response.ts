/**
 * Chat-completions answers → `effect/ai` response parts (encoded form).
 */
import * as AiError from "effect/ai/AiError"
import type * as Response from "effect/ai/Response"
import * as Effect from "effect/Effect"
import * as ToolCallId from "./toolCallId.js"
import type * as Wire from "./wire.js"

export const finishReason = (reason: string | null | undefined, hasToolCalls: boolean): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return hasToolCalls ? "tool-calls" : "stop"
    case "length":
    case "model_length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case "error":
      return "error"
    case null:
    case undefined:
    case "":
      return hasToolCalls ? "tool-calls" : "unknown"
    default:
      return "other"
  }
}

/**
 * The usage of an answer: prompt tokens (of which cached: `cacheRead`, the rest `uncached`) and completion tokens
 * (of which `reasoning`, the rest `text`).
 */
export const usage = (raw: Wire.Usage | null | undefined): typeof Response.Usage.Encoded => {
  const cached = raw?.prompt_tokens_details?.cached_tokens ?? raw?.prompt_token_details?.cached_tokens ??
    raw?.num_cached_tokens ?? undefined
  const reasoning = raw?.completion_tokens_details?.reasoning_tokens ?? undefined
  const input = raw?.prompt_tokens ?? undefined
  const output = raw?.completion_tokens ?? undefined
  return {
    inputTokens: {
      total: input,
      cacheRead: cached,
      uncached: input !== undefined && cached !== undefined ? input - cached : undefined
    },
    outputTokens: {
      total: output,
      reasoning,
      text: output !== undefined && reasoning !== undefined ? output - reasoning : undefined
    }
  }
}

/**
 * The finish part: reason, usage, and the server's `total_tokens` (or the sum of prompt and completion tokens) under
 * `metadata.mistral.totalTokens`, as `Response.Usage` has no total.
 */
export const finishPart = (
  reason: Response.FinishReason,
  raw: Wire.Usage | null | undefined
): Response.FinishPartEncoded => {
  const input = raw?.prompt_tokens ?? undefined
  const output = raw?.completion_tokens ?? undefined
  const total = raw?.total_tokens ?? (input !== undefined && output !== undefined ? input + output : undefined)
  return {
    type: "finish",
    reason,
    usage: usage(raw),
    ...(total === undefined ? {} : { metadata: { mistral: { totalTokens: total } } })
  }
}

export const responseMetadata = (raw: {
  readonly id?: string | null | undefined
  readonly model?: string | null | undefined
  readonly created?: number | null | undefined
}): Response.ResponseMetadataPartEncoded => ({
  type: "response-metadata",
  ...(typeof raw.id === "string" ? { id: raw.id } : {}),
  ...(typeof raw.model === "string" ? { modelId: raw.model } : {}),
  ...(typeof raw.created === "number" ? { timestamp: new Date(raw.created * 1000).toISOString() } : {})
})

export interface ResponseOptions {
  /** The text of the assistant `prefix` the request ended with: the answer repeats it. */
  readonly prefix?: string | undefined
  /** Reasoning from `thinking` chunks is marked as Mistral's only with the `"mistral"` flavour. */
  readonly flavour?: Wire.Flavour | undefined
}

/**
 * The metadata of reasoning parts made from `thinking` chunks of a Mistral answer: a prompt reasoning part carrying
 * the same under `options.mistral` is replayed as a `thinking` chunk.
 */
export const thinkingMetadata = (
  flavour: Wire.Flavour | undefined
): { readonly metadata?: { readonly mistral: { readonly type: "thinking" } } } =>
  flavour === "mistral" ? { metadata: { mistral: { type: "thinking" } } } : {}

/** Splits `content` (string or chunks) into answer text and reasoning (`thinking` chunks). */
export const splitContent = (
  content: Wire.ResponseMessage["content"]
): ReadonlyArray<{ readonly kind: "text" | "reasoning"; readonly text: string }> => {
  if (content === null || content === undefined) return []
  if (typeof content === "string") return content.length > 0 ? [{ kind: "text", text: content }] : []
  const out: Array<{ kind: "text" | "reasoning"; text: string }> = []
  for (const chunk of content) {
    if (chunk.type === "text" && typeof chunk.text === "string" && chunk.text.length > 0) {
      out.push({ kind: "text", text: chunk.text })
    } else if (chunk.type === "thinking") {
      const thinking = chunk.thinking
      const text = typeof thinking === "string"
        ? thinking
        : (thinking ?? []).map((part) => part.text ?? "").join("")
      if (text.length > 0) out.push({ kind: "reasoning", text })
    }
  }
  return out
}

export const parseArguments = (
  method: string,
  name: string,
  args: string | Readonly<Record<string, unknown>> | null | undefined
): Effect.Effect<unknown, AiError.AiError> => {
  if (args !== null && typeof args === "object") return Effect.succeed(args)
  const text = typeof args === "string" && args.trim().length > 0 ? args : "{}"
  return Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () =>
      AiError.make({
        module: "MistralLanguageModel",
        method,
        reason: new AiError.InvalidOutputError({
          description: `Tool call ${name} has arguments that are not valid JSON: ${text.slice(0, 200)}`
        })
      })
  })
}

/**
 * Mistral's answer to a request that ends with an assistant `prefix` message repeats the prefix (the docs strip it
 * with `content[len(prefix):]`). This drops it from the start of the answer text, fed piece by piece: text is held
 * back while it could still be the repeated prefix, and passed on unchanged as soon as it is not.
 */
export const makePrefixStripper = (prefix: string | undefined): (text: string) => string => {
  let pending: string | undefined = prefix === undefined || prefix.length === 0 ? undefined : ""
  return (text) => {
    if (pending === undefined || prefix === undefined) return text
    pending += text
    if (pending.length >= prefix.length) {
      const out = pending.startsWith(prefix) ? pending.slice(prefix.length) : pending
      pending = undefined
      return out
    }
    if (prefix.startsWith(pending)) return ""
    const out = pending
    pending = undefined
    return out
  }
}

/**
 * The text of the trailing assistant `prefix` message of a request, if it ends with one.
 */
export const prefixOf = (request: Wire.ChatCompletionRequest): string | undefined => {
  const last = request.messages[request.messages.length - 1]
  if (last?.role !== "assistant" || last.prefix !== true) return undefined
  if (typeof last.content === "string") return last.content
  return (last.content ?? []).flatMap((chunk) => chunk.type === "text" ? [chunk.text] : []).join("")
}

export const isRealId = (id: string | null | undefined): id is string =>
  typeof id === "string" && id.length > 0 && id !== "null"

export const makeResponse = (
  response: Wire.ChatCompletionResponse,
  options: ResponseOptions = {}
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const strip = makePrefixStripper(options.prefix)
    const parts: Array<Response.PartEncoded> = [responseMetadata(response)]
    const choice = response.choices[0]
    if (choice === undefined) {
      return yield* AiError.make({
        module: "MistralLanguageModel",
        method: "generateText",
        reason: new AiError.InvalidResponseError({ description: "The chat completion has no choices" })
      })
    }
    const message = choice.message
    const reasoningField = message.reasoning ?? message.reasoning_content
    if (typeof reasoningField === "string" && reasoningField.length > 0) {
      parts.push({ type: "reasoning", text: reasoningField })
    }
    for (const piece of splitContent(message.content)) {
      if (piece.kind === "reasoning") {
        parts.push({ type: "reasoning", text: piece.text, ...thinkingMetadata(options.flavour) })
        continue
      }
      const text = strip(piece.text)
      if (text.length > 0) parts.push({ type: "text", text })
    }
    const calls = message.tool_calls ?? []
    for (const call of calls) {
      const name = call.function?.name ?? ""
      const id = isRealId(call.id) ? call.id : yield* ToolCallId.mint
      const params = yield* parseArguments("generateText", name, call.function?.arguments)
      parts.push({ type: "tool-call", id, name, params })
    }
    parts.push(finishPart(finishReason(choice.finish_reason, calls.length > 0), response.usage))
    return parts
  })
