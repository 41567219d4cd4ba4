/**
 * Stream chunks → `effect/ai` stream parts.
 *
 * Text deltas become `text-start/-delta/-end`; `thinking` chunks (Mistral) and the `reasoning` /
 * `reasoning_content` delta fields (vLLM, Ollama) become `reasoning-*`, never text. Tool calls are accumulated by
 * `index` whether they arrive whole (Mistral, Ollama) or in fragments (OpenAI, vLLM, llama.cpp, GLM on Mistral):
 * `tool-params-start` once the name is known, `tool-params-delta` per argument fragment, and at the end of the
 * stream `tool-params-end` plus one `tool-call` per call. A repeated `index` with a different id (Ollama's
 * parallel calls all at index 0) opens a new call. The `finish` part comes last, with the usage of the last chunk
 * that had one (Mistral: the finish chunk; OpenAI-compatible: a trailing chunk with `choices: []`).
 */
import * as AiError from "effect/ai/AiError"
import type * as Response from "effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as InternalResponse from "./response.js"
import * as ToolCallId from "./toolCallId.js"
import type * as Wire from "./wire.js"

interface Slot {
  id: string | undefined
  name: string
  args: string
  partId: string | undefined
}

export const makeStreamResponse = (
  chunks: Stream.Stream<Wire.ChatCompletionChunk, AiError.AiError>,
  options: InternalResponse.ResponseOptions = {}
): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
  Stream.suspend(() => {
    const strip = InternalResponse.makePrefixStripper(options.prefix)
    let metadataSent = false
    let blockCounter = 0
    // A block is text, reasoning from a `thinking` chunk (marked as Mistral's), or other reasoning (`reasoning` /
    // `reasoning_content` fields).
    type Kind = "text" | "thinking" | "reasoning"
    let open: { readonly kind: Kind; readonly id: string } | undefined
    const thinking = InternalResponse.thinkingMetadata(options.flavour)
    const metadataOf = (kind: Kind) => kind === "thinking" ? thinking : {}
    let finish: string | null | undefined
    let lastUsage: Wire.Usage | undefined
    const slots = new Map<number, Slot>()
    const order: Array<Slot> = []

    const close = (parts: Array<Response.StreamPartEncoded>) => {
      if (open === undefined) return
      parts.push(
        open.kind === "text"
          ? { type: "text-end", id: open.id }
          : { type: "reasoning-end", id: open.id, ...metadataOf(open.kind) }
      )
      open = undefined
    }

    const delta = (parts: Array<Response.StreamPartEncoded>, kind: Kind, text: string) => {
      if (text.length === 0) return
      if (open?.kind !== kind) {
        close(parts)
        const id = `${kind === "text" ? "text" : "reasoning"}-${blockCounter++}`
        open = { kind, id }
        parts.push(
          kind === "text" ? { type: "text-start", id } : { type: "reasoning-start", id, ...metadataOf(kind) }
        )
      }
      parts.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id: open.id, delta: text })
    }

    const toolDelta = (parts: Array<Response.StreamPartEncoded>, call: Wire.ResponseToolCall, position: number) =>
      Effect.gen(function*() {
        const key = call.index ?? position
        const realId = InternalResponse.isRealId(call.id) ? call.id : undefined
        const rawArgs = call.function?.arguments
        const args = rawArgs === null || rawArgs === undefined
          ? ""
          : typeof rawArgs === "string"
          ? rawArgs
          : JSON.stringify(rawArgs)
        const name = call.function?.name ?? ""
        let slot = slots.get(key)
        if (slot !== undefined && realId !== undefined && slot.id !== undefined && slot.id !== realId) {
          slot = undefined // same index, different call (Ollama)
        }
        if (slot === undefined) {
          slot = { id: realId, name: "", args: "", partId: undefined }
          slots.set(key, slot)
          order.push(slot)
        }
        if (realId !== undefined && slot.id === undefined) slot.id = realId
        // Never overwrite a name: continuations carry "" (Mistral) or repeat it (vLLM).
        if (name.length > 0 && slot.name.length === 0) slot.name = name
        slot.args += args
        if (slot.partId === undefined) {
          if (slot.name.length === 0) return
          slot.partId = slot.id ?? (yield* ToolCallId.mint)
          parts.push({ type: "tool-params-start", id: slot.partId, name: slot.name })
          if (slot.args.length > 0) parts.push({ type: "tool-params-delta", id: slot.partId, delta: slot.args })
        } else if (args.length > 0) {
          parts.push({ type: "tool-params-delta", id: slot.partId, delta: args })
        }
      })

    const onChunk = (chunk: Wire.ChatCompletionChunk) =>
      Effect.gen(function*() {
        const parts: Array<Response.StreamPartEncoded> = []
        if (!metadataSent) {
          metadataSent = true
          parts.push(InternalResponse.responseMetadata(chunk))
        }
        if (chunk.usage !== null && chunk.usage !== undefined) lastUsage = chunk.usage
        const choice = (chunk.choices ?? [])[0]
        if (choice === undefined) return parts
        const message = choice.delta
        if (message !== null && message !== undefined) {
          delta(parts, "reasoning", message.reasoning ?? message.reasoning_content ?? "")
          for (const piece of InternalResponse.splitContent(message.content)) {
            if (piece.kind === "text") delta(parts, "text", strip(piece.text))
            else delta(parts, "thinking", piece.text)
          }
          const calls = message.tool_calls ?? []
          for (let i = 0; i < calls.length; i++) {
            yield* toolDelta(parts, calls[i], i)
          }
        }
        if (typeof choice.finish_reason === "string" && choice.finish_reason.length > 0) {
          finish = choice.finish_reason
        }
        return parts
      })

    const onEnd = Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = []
      close(parts)
      for (const slot of order) {
        if (slot.name.length === 0) {
          return yield* AiError.make({
            module: "MistralLanguageModel",
            method: "streamText",
            reason: new AiError.InvalidOutputError({
              description: "A streamed tool call never received a function name"
            })
          })
        }
        const partId = slot.partId ?? slot.id ?? (yield* ToolCallId.mint)
        if (slot.partId === undefined) {
          parts.push({ type: "tool-params-start", id: partId, name: slot.name })
          if (slot.args.length > 0) parts.push({ type: "tool-params-delta", id: partId, delta: slot.args })
        }
        parts.push({ type: "tool-params-end", id: partId })
        const params = yield* InternalResponse.parseArguments("streamText", slot.name, slot.args)
        parts.push({ type: "tool-call", id: partId, name: slot.name, params })
      }
      return parts
    })

    // The finish part goes in its own chunk, so `LanguageModel` appends tool results before it.
    const finishPart = Effect.sync((): Response.StreamPartEncoded =>
      InternalResponse.finishPart(InternalResponse.finishReason(finish, order.length > 0), lastUsage)
    )

    return chunks.pipe(
      Stream.mapEffect(onChunk),
      Stream.flattenIterable,
      Stream.concat(Stream.fromIterableEffect(onEnd)),
      Stream.concat(Stream.fromEffect(finishPart))
    )
  })
