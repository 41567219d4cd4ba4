/**
 * `@effect/ai` `Prompt` → chat-completions `messages`, applying Mistral's conversation rules (mistral-common's
 * validator) so a replayed session is never rejected before the model runs:
 *
 * 1. tool-call ids match `^[a-zA-Z0-9]{9}$` (ids from other providers are remapped deterministically);
 * 2. function names match `^[a-zA-Z0-9_-]{1,64}$` (names in the history are sanitised);
 * 3. after a `tool` message only `assistant` or `tool` may follow (a short assistant message bridges to `user`),
 *    and `system` may not follow `assistant` / `tool` (all system messages are merged into one, first);
 * 4. each assistant `tool_calls` message is followed by exactly one tool message per call, in call order,
 *    without duplicates (results are moved next to their call; a missing result becomes a failure result);
 * 5. the last message is `user` or `tool`, or an assistant message with `prefix: true`;
 * 6. an assistant message with `tool_calls` has empty content (its text goes into an assistant message before it).
 *
 * With the `compat` flavour rules 1 and 4 still apply (OpenAI requires 4 too); the others are Mistral-only.
 */
import * as AiError from "@effect/ai/AiError"
import type * as Prompt from "@effect/ai/Prompt"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as ToolCallId from "./toolCallId.js"
import type * as Wire from "./wire.js"

/** The text of the assistant message inserted between a tool result and a following user message. */
export const BRIDGE_TEXT = "Tool results received."

/** The content of a tool message synthesised for a tool call that has no recorded result. */
export const MISSING_RESULT = JSON.stringify({ error: "No result was recorded for this tool call." })

const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/

export const isValidName = (name: string): boolean => VALID_NAME.test(name)

export const sanitizeName = (name: string): string => {
  if (isValidName(name)) return name
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64)
  return cleaned.length > 0 ? cleaned : "tool"
}

const malformed = (description: string, cause?: unknown) =>
  new AiError.MalformedInput({ module: "MistralLanguageModel", method: "prepareMessages", description, cause })

const stringify = (value: unknown): Effect.Effect<string, AiError.MalformedInput> =>
  Effect.try({
    try: () => typeof value === "string" ? value : JSON.stringify(value) ?? "null",
    catch: (cause) => malformed("A tool call or result is not JSON-serialisable", cause)
  })

/** Success: the result as text (strings as they are, everything else as JSON). Failure: `{"error": result}`. */
const toolResultContent = (part: Prompt.ToolResultPart) =>
  part.isFailure ? stringify({ error: part.result }) : stringify(part.result)

const fileUrl = (part: Prompt.FilePart): string => {
  if (part.data instanceof URL) return part.data.toString()
  if (typeof part.data === "string") {
    return /^(https?:|data:)/.test(part.data) ? part.data : `data:${part.mediaType};base64,${part.data}`
  }
  return `data:${part.mediaType};base64,${Encoding.encodeBase64(part.data)}`
}

const userContent = (
  message: Prompt.UserMessage,
  flavour: Wire.Flavour
): Effect.Effect<string | ReadonlyArray<Wire.ContentChunk>, AiError.MalformedInput> =>
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

export const prepareMessages = (
  prompt: Prompt.Prompt,
  flavour: Wire.Flavour
): Effect.Effect<Array<Wire.Message>, AiError.MalformedInput> =>
  Effect.gen(function*() {
    const mistral = flavour === "mistral"
    const mapId = ToolCallId.makeMapper()
    const name = (raw: string) => mistral ? sanitizeName(raw) : raw

    // Rule 3: one system message, first.
    const system = prompt.content.flatMap((message) => message.role === "system" ? [message.content] : [])

    // Rule 4: tool results by id, wherever they are; each is placed after its call.
    const results = new Map<string, Prompt.ToolResultPart>()
    for (const message of prompt.content) {
      if (message.role !== "tool") continue
      for (const part of message.content) {
        if (!results.has(part.id)) results.set(part.id, part)
      }
    }

    const messages: Array<Wire.Message> = []
    if (system.length > 0) messages.push({ role: "system", content: system.join("\n\n") })

    const seenCallIds = new Map<string, number>()
    for (const message of prompt.content) {
      switch (message.role) {
        case "user": {
          messages.push({ role: "user", content: yield* userContent(message, flavour) })
          break
        }
        case "assistant": {
          // Reasoning parts are not replayed; provider-executed calls and results have no meaning here.
          const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
          const calls = message.content.flatMap((part) =>
            part.type === "tool-call" && !part.providerExecuted ? [part] : []
          )
          if (calls.length === 0) {
            if (text.length > 0) messages.push({ role: "assistant", content: text })
            break
          }
          const toolCalls: Array<Wire.ToolCall> = []
          const toolMessages: Array<Wire.Message> = []
          for (const call of calls) {
            // A repeated id (same call replayed twice) gets its own id and no result: ids must be unique.
            const seen = seenCallIds.get(call.id) ?? 0
            seenCallIds.set(call.id, seen + 1)
            const id = mapId(seen === 0 ? call.id : `${call.id}#${seen}`)
            const result = seen === 0 ? results.get(call.id) : undefined
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
            // Rule 6.
            if (text.length > 0) messages.push({ role: "assistant", content: text })
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

    // Rule 3: bridge tool → user.
    const ordered: Array<Wire.Message> = []
    for (const message of messages) {
      const previous = ordered[ordered.length - 1]
      if (previous?.role === "tool" && message.role === "user") {
        ordered.push({ role: "assistant", content: BRIDGE_TEXT })
      }
      ordered.push(message)
    }

    // Rule 5: a trailing assistant message becomes a prefix to continue.
    const last = ordered[ordered.length - 1]
    if (last?.role === "assistant" && last.tool_calls === undefined) {
      ordered[ordered.length - 1] = { ...last, prefix: true }
    }
    return ordered
  })
