/**
 * GenAI span attributes (OpenTelemetry semantic conventions, through `effect/ai`'s `Telemetry`), set on the span
 * `LanguageModel` hands to the provider: the request before it is sent, the response (or each stream chunk) as it
 * arrives. Attributes are read from the wire, so they say what was actually sent and answered.
 */
import * as Telemetry from "effect/ai/Telemetry"
import type { Span } from "effect/Tracer"
import type * as Wire from "./wire.js"

const number = (value: unknown): number | undefined => typeof value === "number" ? value : undefined

/**
 * `gen_ai.provider.name` is the provider "as identified by the client instrumentation": Mistral's API for the
 * `"mistral"` flavour, OpenAI's dialect for `"compat"` (the semantic conventions' own example: an OpenAI client
 * talking to another server reports `openai`).
 */
export const providerName = (flavour: Wire.Flavour): Telemetry.WellKnownProviderName =>
  flavour === "mistral" ? "mistral_ai" : "openai"

export const annotateRequest = (span: Span, flavour: Wire.Flavour, request: Wire.ChatCompletionRequest): void => {
  const stop = request.stop
  Telemetry.addGenAIAnnotations(span, {
    provider: { name: providerName(flavour) },
    operation: { name: "chat" },
    request: {
      model: request.model,
      temperature: number(request.temperature),
      topP: number(request.top_p),
      maxTokens: number(request.max_tokens) ?? number(request.max_completion_tokens),
      seed: number(request.random_seed) ?? number(request.seed),
      stopSequences: stop === undefined ? undefined : typeof stop === "string" ? [stop] : stop,
      presencePenalty: number(request.presence_penalty),
      frequencyPenalty: number(request.frequency_penalty)
    }
  })
}

const annotateUsage = (span: Span, usage: Wire.Usage | null | undefined): void => {
  if (usage === null || usage === undefined) return
  Telemetry.addGenAIAnnotations(span, {
    usage: { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens }
  })
}

const finishReasons = (
  choices: ReadonlyArray<{ readonly finish_reason?: string | null | undefined }> | null | undefined
): ReadonlyArray<string> =>
  (choices ?? []).flatMap((choice) =>
    typeof choice.finish_reason === "string" && choice.finish_reason.length > 0 ? [choice.finish_reason] : []
  )

export const annotateResponse = (span: Span, response: Wire.ChatCompletionResponse): void => {
  const reasons = finishReasons(response.choices)
  Telemetry.addGenAIAnnotations(span, {
    response: {
      id: response.id,
      model: response.model,
      finishReasons: reasons.length > 0 ? reasons : undefined
    }
  })
  annotateUsage(span, response.usage)
}

/**
 * An annotator for the chunks of one stream: the response id and model from the first chunk that has them, the
 * finish reasons from the chunk that carries them, the usage from the last chunk that has one (Mistral: the finish
 * chunk; OpenAI-compatible servers: a trailing chunk with `choices: []`).
 */
export const makeChunkAnnotator = (span: Span): (chunk: Wire.ChatCompletionChunk) => void => {
  let identified = false
  return (chunk) => {
    if (!identified && (typeof chunk.id === "string" || typeof chunk.model === "string")) {
      identified = true
      Telemetry.addGenAIAnnotations(span, { response: { id: chunk.id, model: chunk.model } })
    }
    const reasons = finishReasons(chunk.choices)
    if (reasons.length > 0) Telemetry.addGenAIAnnotations(span, { response: { finishReasons: reasons } })
    annotateUsage(span, chunk.usage)
  }
}
