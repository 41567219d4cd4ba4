/**
 * Per-request configuration for the Mistral provider: sampling parameters, output caps, `reasoning_effort`, the
 * reasoning-replay switch (`replayThinking`), settings for OpenAI-compatible servers only (`compat`),
 * server-specific extra fields and an `HttpClient` transform, overriding what the model was built with.
 *
 * Field names follow Mistral's wire format (`max_tokens`, `random_seed`); with the `"compat"` flavour the
 * provider renames them for OpenAI-compatible servers (`max_completion_tokens`, `seed`).
 *
 * @example
 * ```ts
 * import { LanguageModel } from "effect/ai"
 * import { MistralConfig } from "@parley/mistral"
 *
 * const program = LanguageModel.generateText({ prompt: "Write a haiku" }).pipe(
 *   MistralConfig.withConfigOverride({ temperature: 0.2, max_tokens: 256 })
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as HttpClient from "effect/http/HttpClient"
import * as Option from "effect/Option"

/**
 * The configuration read by `MistralLanguageModel` for each request. Provide it with `withConfigOverride`.
 *
 * @since 0.1.0
 * @category Models
 */
export class MistralConfig extends Context.Service<
  MistralConfig,
  MistralConfig.Service
>()("@parley/mistral/MistralConfig") {
  /**
   * The configuration in the current context, if any.
   *
   * @since 0.1.0
   */
  static readonly getOrUndefined: Effect.Effect<MistralConfig.Service | undefined> = Effect.map(
    Effect.serviceOption(MistralConfig),
    Option.getOrUndefined
  )
}

/**
 * @since 0.1.0
 * @category Models
 */
export declare namespace MistralConfig {
  /**
   * Request parameters. Every field is optional; unset fields are not sent.
   *
   * @since 0.1.0
   * @category Models
   */
  export interface Service {
    /** Sampling temperature (Mistral: 0 to 1.5; values above 1 are rejected by some models). */
    readonly temperature?: number | undefined
    readonly top_p?: number | undefined
    /** Output cap. Sent as `max_tokens` (mistral) or `max_completion_tokens` (compat). */
    readonly max_tokens?: number | undefined
    /** Seed. Sent as `random_seed` (mistral) or `seed` (compat). */
    readonly random_seed?: number | undefined
    readonly stop?: string | ReadonlyArray<string> | undefined
    readonly presence_penalty?: number | undefined
    readonly frequency_penalty?: number | undefined
    /** Set `false` to get at most one tool call per answer. */
    readonly parallel_tool_calls?: boolean | undefined
    /**
     * Reasoning effort for reasoning-capable models: the values Mistral accepts (`"high"`: a full thinking trace;
     * `"none"`: minimal thinking, no trace). Any other value fails with an `AiError` (reason
     * `InvalidRequestError`, `parameter: "reasoning_effort"`) before sending (Mistral answers 422). OpenAI-compatible servers take other values: set them in `compat.reasoning_effort`.
     */
    readonly reasoning_effort?: ReasoningEffort | undefined
    /** Predicted output. */
    readonly prediction?: { readonly type: "content"; readonly content: string } | undefined
    /** Mistral only: inject Mistral's safety system prompt. */
    readonly safe_prompt?: boolean | undefined
    /** Mistral only (deprecated by Mistral for reasoning models). */
    readonly prompt_mode?: "reasoning" | undefined
    /** Mistral only: prompt cache key. */
    readonly prompt_cache_key?: string | undefined
    /**
     * Extra top-level fields merged into the request body as they are, after every other field. Mistral rejects
     * unknown fields with a 422; use this for server-specific parameters of OpenAI-compatible servers (for
     * example `{ max_tokens: 512 }` for Ollama, which ignores `max_completion_tokens`, or vLLM's `top_k`).
     */
    readonly extraBody?: Readonly<Record<string, unknown>> | undefined
    /** Transforms the `HttpClient` used for this request (headers, tracing, proxies). */
    readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
    /**
     * Whether reasoning a Mistral model produced (reasoning parts marked `options: { mistral: { type: "thinking" }
     * }`, as `MistralLanguageModel` marks them in its answers) is sent back as `thinking` chunks, as Mistral's
     * reasoning guide asks for multi-turn conversations. Never sent with the `"compat"` flavour, and never sent for
     * unmarked reasoning (another provider's). Not a wire field.
     *
     * Default: on for the models documented to answer with thinking chunks (`magistral-*` except `*-2506`,
     * `mistral-medium-3-5` / `-3` / `-latest`, `mistral-small-2603` / `-latest`), off for the others, whose
     * tokenizers (before v13) reject thinking chunks with a 400.
     */
    readonly replayThinking?: boolean | undefined
    /** Settings read only with the `"compat"` flavour (OpenAI-compatible servers); ignored for Mistral. */
    readonly compat?: Compat | undefined
  }

  /**
   * Settings for OpenAI-compatible servers, which accept values Mistral does not.
   *
   * @since 0.1.0
   * @category Models
   */
  export interface Compat {
    /**
     * Sent as `reasoning_effort` in place of the top-level one, as it is (OpenAI: `"minimal"`, `"low"`,
     * `"medium"`, `"high"`; vLLM and Ollama pass it to the chat template).
     */
    readonly reasoning_effort?: string | undefined
  }
}

/**
 * The values of `reasoning_effort` Mistral accepts (spec `ChatCompletionRequest.reasoning_effort`, mistral-common
 * `ReasoningEffort`).
 *
 * @since 0.1.0
 * @category Models
 */
export type ReasoningEffort = "high" | "none"

/**
 * `ReasoningEffort`'s values, to check untyped input against.
 *
 * @since 0.1.0
 * @category Utils
 */
export const REASONING_EFFORTS: ReadonlyArray<ReasoningEffort> = ["high", "none"]

/**
 * Runs an effect with configuration overrides merged over the ones already in context.
 *
 * @since 0.1.0
 * @category Utils
 */
export const withConfigOverride: {
  (overrides: MistralConfig.Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: MistralConfig.Service): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: MistralConfig.Service): Effect.Effect<A, E, R> =>
    Effect.flatMap(
      MistralConfig.getOrUndefined,
      (config) => Effect.provideService(self, MistralConfig, { ...config, ...overrides })
    )
)
