/**
 * `effect/ai` `Prompt` → chat-completions `messages`, applying Mistral's conversation rules (mistral-common's
 * validator) so a replayed session is never rejected before the model runs:
 *
 * 1. tool-call ids match `^[a-zA-Z0-9]{9}$` (ids from other providers are remapped deterministically);
 * 2. function names match `^[a-zA-Z0-9_-]{1,64}$` (names in the history are sanitised);
 * 3. the conversation starts with `user` or `system` (an empty user message goes before a leading assistant
 *    message), and `system` may not follow `assistant` / `tool` (all system messages are merged into one, first);
 * 4. each assistant `tool_calls` message is followed by exactly one tool message per call, in call order,
 *    without duplicates (each result is paired with the nearest earlier unanswered call of its id and moved next to
 *    it; calls that reuse an id get distinct wire ids; a missing result becomes a failure result);
 * 5. the last message is `user` or `tool`, or an assistant message with `prefix: true`;
 * 6. an assistant message with `tool_calls` has empty content (its text goes into an assistant message before it).
 *
 * Reasoning a Mistral model produced (parts marked `options.mistral.type === "thinking"`) is sent back as `thinking`
 * chunks when `replayThinking` is set (Mistral flavour only), as Mistral's reasoning guide asks; other reasoning is
 * never sent.
 *
 * With the `compat` flavour rules 1 and 4 still apply (OpenAI requires 4 too); the others are Mistral-only.
 */
import * as AiError from "effect/ai/AiError"
import * as Prompt from "effect/ai/Prompt"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as ToolCallId from "./toolCallId.js"
import type * as Wire from "./wire.js"

/** The content of a tool message synthesised for a tool call that has no recorded result. */
export const MISSING_RESULT = JSON.stringify({ error: "No result was recorded for this tool call." })

const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/

export const isValidName = (name: string): boolean => VALID_NAME.test(name)

export const sanitizeName = (name: string): string => {
  if (isValidName(name)) return name
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64)
  return cleaned.length > 0 ? cleaned : "tool"
}

/** A tool call of the prompt, the id it is sent with and the result paired with it. */
interface CallSlot {
  readonly call: Prompt.ToolCallPart
  readonly id: string
  result: Prompt.ToolResultPart | undefined
}

const malformed = (description: string) =>
  AiError.make({
    module: "MistralLanguageModel",
    method: "prepareMessages",
    reason: new AiError.InvalidRequestError({ description })
  })

const stringify = (value: unknown): Effect.Effect<string, AiError.AiError> =>
  Effect.try({
    try: () => typeof value === "string" ? value : JSON.stringify(value) ?? "null",
    catch: (cause) =>
      malformed(
        `A tool call or result is not JSON-serialisable: ${cause instanceof Error ? cause.message : String(cause)}`
      )
  })

/**
 * Success: the content meant for the model (`modelOutput`, as text) or the result as text (strings as they are,
 * everything else as JSON). Failure: `{"error": result}`.
 */
const toolResultContent = (part: Prompt.ToolResultPart) =>
  part.isFailure
    ? stringify({ error: part.result })
    : part.modelOutput !== undefined
    ? Effect.succeed(Prompt.toolModelOutputToText(part.modelOutput))
    : stringify(part.result)

const fileUrl = (part: Prompt.FilePart): string => {
  if (part.data instanceof URL) return part.data.toString()
  if (typeof part.data === "string") {
    return /^(https?:|data:)/.test(part.data) ? part.data : `data:${part.mediaType};base64,${part.data}`
  }
  return `data:${part.mediaType};base64,${Base64.encode(part.data)}`
}

const userContent = (
  message: Prompt.UserMessage,
  flavour: Wire.Flavour
): Effect.Effect<string | ReadonlyArray<Wire.ContentChunk>, AiError.AiError> =>
  Effect.gen(function*() {
    if (message.content.every((part) => part.type === "text")) {
      return message.content.map((part) => part.text).join("\n\n")
    }
    const chunks: Array<Wire.ContentChunk> = []
    for (const part of message.content) {
      if (part.type === "text") {
        chunks.push({ type: "text", text: part.text })
      } else if (part.mediaType.startsWith("image/")) {
        chunks.push({ type: "image_url", image_url: { url: fileUrl(part) } })
      } else if (flavour === "mistral" && part.mediaType === "application/pdf") {
        chunks.push({
          type: "document_url",
          document_url: fileUrl(part),
          ...(part.fileName === undefined ? {} : { document_name: part.fileName })
        })
      } else {
        return yield* malformed(`Unsupported file type in a user message: ${part.mediaType}`)
      }
    }
    return chunks
  })

const isMistralThinking = (part: Prompt.ReasoningPart): boolean => part.options.mistral?.type === "thinking"

/**
 * The content of an assistant message with its Mistral reasoning as `thinking` chunks, in the order of the parts;
 * the text alone (a string) when it has none. Reasoning without the mark (another provider's) is left out.
 */
const withThinking = (message: Prompt.AssistantMessage): string | Array<Wire.AssistantContentChunk> => {
  const hasThinking = message.content.some((part) => part.type === "reasoning" && isMistralThinking(part))
  if (!hasThinking) return message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
  const chunks: Array<Wire.AssistantContentChunk> = []
  for (const part of message.content) {
    if (part.type === "text" && part.text.length > 0) {
      const previous = chunks[chunks.length - 1]
      if (previous?.type === "text") chunks[chunks.length - 1] = { type: "text", text: previous.text + part.text }
      else chunks.push({ type: "text", text: part.text })
    } else if (part.type === "reasoning" && isMistralThinking(part) && part.text.length > 0) {
      chunks.push({ type: "thinking", thinking: [{ type: "text", text: part.text }] })
    }
  }
  return chunks
}

export const prepareMessages = (
  prompt: Prompt.Prompt,
  flavour: Wire.Flavour,
  options: {
    /** Send reasoning marked as Mistral's (`options.mistral.type === "thinking"`) as `thinking` chunks. */
    readonly replayThinking?: boolean | undefined
  } = {}
): Effect.Effect<Array<Wire.Message>, AiError.AiError> =>
  Effect.gen(function*() {
    const mistral = flavour === "mistral"
    const replayThinking = mistral && options.replayThinking === true
    const mapId = ToolCallId.makeMapper()
    const name = (raw: string) => mistral ? sanitizeName(raw) : raw

    // Rule 3: one system message, first.
    const system = prompt.content.flatMap((message) => message.role === "system" ? [message.content] : [])

    // Rule 4: each result is paired with the nearest earlier assistant message that has a call with its id and
    // no result yet (the first such call of that message, in call order), and is placed right after it. Servers
    // that reuse ids (Kimi's `functions.<name>:<idx>`, llama.cpp's constant ids) thus keep every round's result.
    const slotsByMessage = new Map<Prompt.Message, Array<CallSlot>>()
    const turns: Array<Array<CallSlot>> = []
    const occurrences = new Map<string, number>()
    for (const message of prompt.content) {
      if (message.role === "assistant") {
        const slots: Array<CallSlot> = []
        for (const part of message.content) {
          if (part.type !== "tool-call" || part.providerExecuted) continue
          const occurrence = occurrences.get(part.id) ?? 0
          occurrences.set(part.id, occurrence + 1)
          slots.push({ call: part, id: mapId(part.id, occurrence), result: undefined })
        }
        slotsByMessage.set(message, slots)
        if (slots.length > 0) turns.push(slots)
      } else if (message.role === "tool") {
        for (const part of message.content) {
          if (part.type !== "tool-result") continue
          for (let i = turns.length - 1; i >= 0; i--) {
            const slot = turns[i].find((candidate) => candidate.call.id === part.id && candidate.result === undefined)
            if (slot !== undefined) {
              slot.result = part
              break
            }
          }
        }
      }
    }

    const messages: Array<Wire.Message> = []
    if (system.length > 0) messages.push({ role: "system", content: system.join("\n\n") })

    for (const message of prompt.content) {
      switch (message.role) {
        case "user": {
          messages.push({ role: "user", content: yield* userContent(message, flavour) })
          break
        }
        case "assistant": {
          // Provider-executed calls and results have no meaning here. Reasoning is replayed only when it is a
          // Mistral model's (marked) and the target model takes `thinking` chunks.
          const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
          const content = replayThinking ? withThinking(message) : text
          const hasContent = content.length > 0
          const slots = slotsByMessage.get(message) ?? []
          if (slots.length === 0) {
            if (hasContent) messages.push({ role: "assistant", content })
            break
          }
          const toolCalls: Array<Wire.ToolCall> = []
          const toolMessages: Array<Wire.Message> = []
          for (const { call, id, result } of slots) {
            toolCalls.push({
              id,
              type: "function",
              function: { name: name(call.name), arguments: yield* stringify(call.params ?? {}) }
            })
            const content = result === undefined ? MISSING_RESULT : yield* toolResultContent(result)
            toolMessages.push(
              mistral
                ? { role: "tool", name: name(call.name), tool_call_id: id, content }
                : { role: "tool", tool_call_id: id, content }
            )
          }
          if (mistral) {
            // Rule 6. mistral-common merges consecutive assistant messages, so a model still sees its thinking,
            // text and calls as one message.
            if (hasContent) messages.push({ role: "assistant", content })
            messages.push({ role: "assistant", content: "", tool_calls: toolCalls })
          } else {
            messages.push({ role: "assistant", content: text.length > 0 ? text : null, tool_calls: toolCalls })
          }
          messages.push(...toolMessages)
          break
        }
        case "system":
        case "tool":
          break
      }
    }

    if (!mistral) return messages

    // Rule 3: the conversation starts with `user` or `system` (mistral-common inserts an empty user message in
    // that case too). A `user` message may follow `tool` results (mistral-common >= 1.11, April 2026).
    const ordered: Array<Wire.Message> = messages[0]?.role === "assistant"
      ? [{ role: "user", content: "" }, ...messages]
      : messages

    // Rule 5: a trailing assistant message becomes a prefix to continue.
    const last = ordered[ordered.length - 1]
    if (last?.role === "assistant" && last.tool_calls === undefined) {
      ordered[ordered.length - 1] = { ...last, prefix: true }
    }
    return ordered
  })
