/**
 * An `effect/ai` `LanguageModel` backed by Mistral chat completions (or an OpenAI-compatible server, through a
 * `MistralClient` with the `"compat"` flavour).
 *
 * It maps `Prompt`s to messages that satisfy Mistral's conversation rules (9-character alphanumeric tool-call ids,
 * role order, one tool message per call, empty content beside `tool_calls`, last-message rule), `effect/ai` tools
 * to function tools (JSON Schema from `Tool.getJsonSchema`, so `Tool.dynamic` tools described only by raw JSON
 * Schema work), and answers back to response parts: text, reasoning (Mistral `thinking` chunks, vLLM/Ollama
 * `reasoning`), tool calls (whole or fragmented in streams), usage (`metadata.mistral.totalTokens` on the finish
 * part) and finish reason. Reasoning from Mistral `thinking` chunks carries `metadata.mistral`; copied into a prompt
 * reasoning part's `options.mistral`, it is sent back as a `thinking` chunk (see `MistralConfig.replayThinking`).
 * Structured answers (`generateObject`) ask for a strict `json_schema` response format, with the schema made by
 * `OpenAiStructuredOutput.toCodecOpenAI` (closed objects, every property required, optional ones nullable). The span
 * `LanguageModel` opens for each call gets the OpenTelemetry GenAI attributes (`gen_ai.provider.name`,
 * `gen_ai.operation.name`, `gen_ai.request.*`, `gen_ai.response.*`, `gen_ai.usage.*`).
 *
 * @example
 * ```ts
 * import { LanguageModel } from "effect/ai"
 * import { MistralClient, MistralLanguageModel } from "@parley/mistral"
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 *
 * const Model = MistralLanguageModel.layer({ model: "mistral-large-latest", config: { temperature: 0.3 } }).pipe(
 *   Layer.provide(MistralClient.layerConfig()),
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 *
 * const program = LanguageModel.generateText({ prompt: "Say hello" }).pipe(
 *   Effect.map((response) => response.text),
 *   Effect.provide(Model)
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as LanguageModel from "effect/ai/LanguageModel"
import * as AiModel from "effect/ai/Model"
import { toCodecOpenAI } from "effect/ai/OpenAiStructuredOutput"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as InternalRequest from "./internal/request.js"
import * as InternalResponse from "./internal/response.js"
import * as InternalStream from "./internal/stream.js"
import * as InternalTelemetry from "./internal/telemetry.js"
import { MistralClient } from "./MistralClient.js"
import * as MistralConfig from "./MistralConfig.js"

// =============================================================================
// Provider Options / Metadata
// =============================================================================

declare module "effect/ai/Prompt" {
  export interface ReasoningPartOptions extends ProviderOptions {
    readonly mistral?: {
      /**
       * Marks reasoning a Mistral model produced as a `thinking` chunk: it is sent back as one (see
       * `MistralConfig.replayThinking`). Copy it from the answer's `metadata.mistral`.
       */
      readonly type: "thinking"
    } | null
  }
}

declare module "effect/ai/Response" {
  export interface ReasoningPartMetadata extends ProviderMetadata {
    /** Set on reasoning made from Mistral `thinking` chunks (Mistral flavour only). */
    readonly mistral?: { readonly type: "thinking" } | null
  }

  export interface ReasoningStartPartMetadata extends ProviderMetadata {
    /** Set on reasoning made from Mistral `thinking` chunks (Mistral flavour only). */
    readonly mistral?: { readonly type: "thinking" } | null
  }

  export interface ReasoningEndPartMetadata extends ProviderMetadata {
    /** Set on reasoning made from Mistral `thinking` chunks (Mistral flavour only). */
    readonly mistral?: { readonly type: "thinking" } | null
  }

  export interface FinishPartMetadata extends ProviderMetadata {
    /**
     * The answer's `total_tokens` (or the sum of its prompt and completion tokens), which `Usage` has no field for.
     * Absent when the server reported no usage.
     */
    readonly mistral?: { readonly totalTokens: number } | null
  }
}

// =============================================================================
// Models
// =============================================================================

/**
 * Model names. Any string is accepted; the listed ones are Mistral's documented `*-latest` aliases.
 *
 * @since 0.1.0
 * @category Models
 */
export type Model =
  | (string & {})
  | "mistral-large-latest"
  | "mistral-medium-latest"
  | "mistral-small-latest"
  | "ministral-14b-latest"
  | "ministral-8b-latest"
  | "ministral-3b-latest"
  | "codestral-latest"
  | "magistral-medium-latest"
  | "magistral-small-latest"
  | "devstral-latest"

/**
 * Options of `make` and `layer`: the model name and default request parameters (overridable per request with
 * `MistralConfig.withConfigOverride`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly model: Model
  readonly config?: MistralConfig.MistralConfig.Service | undefined
}

/**
 * An `AiModel` for `name`, to pass wherever `effect/ai` takes a model (it is also a `Layer`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const model = (
  name: Model,
  config?: MistralConfig.MistralConfig.Service
): AiModel.Model<"mistral", LanguageModel.LanguageModel, MistralClient> =>
  AiModel.make("mistral", name, layer({ model: name, config }))

/**
 * Builds the `LanguageModel` service on the `MistralClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<LanguageModel.LanguageModel, never, MistralClient> =>
  Effect.gen(function*() {
    const client = yield* MistralClient

    const makeRequest = (providerOptions: LanguageModel.ProviderOptions) =>
      Effect.flatMap(MistralConfig.MistralConfig.getOrUndefined, (override) =>
        InternalRequest.makeRequest({
          model: options.model,
          config: { ...options.config, ...override },
          flavour: client.flavour,
          providerOptions,
          codecTransformer: toCodecOpenAI
        }))

    return yield* LanguageModel.make({
      codecTransformer: toCodecOpenAI,
      generateText: (providerOptions) =>
        makeRequest(providerOptions).pipe(
          Effect.tap((request) =>
            Effect.sync(() => InternalTelemetry.annotateRequest(providerOptions.span, client.flavour, request))
          ),
          Effect.flatMap((request) =>
            client.createChatCompletion(request).pipe(
              Effect.tap((response) =>
                Effect.sync(() => InternalTelemetry.annotateResponse(providerOptions.span, response))
              ),
              Effect.flatMap((response) =>
                InternalResponse.makeResponse(response, {
                  prefix: InternalResponse.prefixOf(request),
                  flavour: client.flavour
                })
              )
            )
          )
        ),
      streamText: (providerOptions) =>
        makeRequest(providerOptions).pipe(
          Effect.tap((request) =>
            Effect.sync(() => InternalTelemetry.annotateRequest(providerOptions.span, client.flavour, request))
          ),
          Effect.map((request) => {
            const annotate = InternalTelemetry.makeChunkAnnotator(providerOptions.span)
            const chunks = client.createChatCompletionStream(request).pipe(
              Stream.tap((chunk) => Effect.sync(() => annotate(chunk)))
            )
            return InternalStream.makeStreamResponse(chunks, {
              prefix: InternalResponse.prefixOf(request),
              flavour: client.flavour
            })
          }),
          Stream.unwrap
        )
    })
  })

/**
 * A layer providing `LanguageModel.LanguageModel`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel, never, MistralClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))

/**
 * Runs an effect with request-parameter overrides (same as `MistralConfig.withConfigOverride`).
 *
 * @since 0.1.0
 * @category Utils
 */
export const withConfigOverride: typeof MistralConfig.withConfigOverride = MistralConfig.withConfigOverride

/**
 * Whether reasoning is replayed as `thinking` chunks to `model` when `MistralConfig.replayThinking` is not set: true
 * for the models documented to answer with thinking chunks (`magistral-*` except `*-2506`, `mistral-medium-3-5`,
 * `mistral-medium-3`, `mistral-medium-latest`, `mistral-small-2603`, `mistral-small-latest`).
 *
 * @since 0.1.0
 * @category Utils
 */
export const replaysThinkingByDefault: (model: string) => boolean = InternalRequest.replaysThinkingByDefault
