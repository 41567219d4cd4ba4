/**
 * The HTTP client for Mistral's `POST /v1/chat/completions` and for OpenAI-compatible servers (vLLM, Ollama,
 * llama.cpp). It is built on Effect's `HttpClient` (`effect/http`), so proxies, tracing and test servers plug in by
 * providing or transforming that client. It retries 429 / 5xx / connection failures with exponential backoff and
 * jitter (honouring `Retry-After`), never other 4xx, and never a stream that has already delivered events.
 *
 * Failures are `AiError`s (`module: "MistralClient"`) whose `reason` says what happened: a non-2xx answer is an
 * `InvalidRequestError` (400, 404, 409, 422), an `AuthenticationError` (401, 403), a `RateLimitError` (429, with
 * `retryAfter`) or a `QuotaExhaustedError` (429 with no request quota), an `InternalProviderError` (5xx) or an
 * `UnknownError` (any other status), each with `http` (status, headers with secrets redacted, raw body) and
 * `metadata.mistral` (a description of what the server said, with its `mistral-correlation-id`); a connection failure
 * is a `NetworkError`; an answer that cannot be read or decoded is an `InvalidResponseError`; an error the server
 * reports inside an event stream is an `UnknownError`.
 *
 * @example
 * ```ts
 * import { MistralClient } from "@parley/mistral"
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 *
 * // Mistral, key from MISTRAL_API_KEY
 * const Mistral = MistralClient.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))
 *
 * // A local OpenAI-compatible server
 * const Ollama = MistralClient.layer({ apiUrl: "http://127.0.0.1:11434/v1", flavour: "compat" }).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 *
 * @since 0.1.0
 */
import type * as AiError from "effect/ai/AiError"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import type * as Stream from "effect/Stream"
import * as Internal from "./internal/client.js"
import { optional } from "./internal/config.js"
import type * as Wire from "./internal/wire.js"

/**
 * Which dialect of the chat-completions API the server speaks. `"mistral"` follows Mistral's closed schema and
 * conversation rules; `"compat"` follows OpenAI's names (`seed`, `max_completion_tokens`, `tool_choice:
 * "required"`, `stream_options`).
 *
 * @since 0.1.0
 * @category Models
 */
export type Flavour = Wire.Flavour

/**
 * A chat-completions request body.
 *
 * @since 0.1.0
 * @category Models
 */
export type ChatCompletionRequest = Wire.ChatCompletionRequest

/**
 * A decoded (non-streaming) chat-completions response.
 *
 * @since 0.1.0
 * @category Models
 */
export type ChatCompletionResponse = Wire.ChatCompletionResponse

/**
 * A decoded stream chunk (`data:` event). Unknown fields, such as Mistral's padding field `p`, are dropped.
 *
 * @since 0.1.0
 * @category Models
 */
export type ChatCompletionChunk = Wire.ChatCompletionChunk

/**
 * Retry settings. Defaults: 4 retries, 500 ms base delay doubling per attempt, capped at 30 s, with jitter.
 * `Retry-After` (seconds or HTTP date) replaces the computed delay when present, up to `maxDelay`: when the server
 * asks for longer, the request is not retried and fails with the answer's error at once (its `metadata.mistral`
 * description saying so).
 *
 * @since 0.1.0
 * @category Models
 */
export interface RetryOptions {
  readonly maxRetries?: number | undefined
  readonly baseDelay?: Duration.Input | undefined
  readonly maxDelay?: Duration.Input | undefined
}

/**
 * What an error made from a Mistral answer carries under `metadata.mistral`: a description of what the server said
 * (its status, its message and validation details, `type` and `code`) and the answer's `mistral-correlation-id`.
 *
 * @since 0.1.0
 * @category Models
 */
export type MistralErrorMetadata = {
  readonly description: string
  readonly correlationId: string | null
}

declare module "effect/ai/AiError" {
  export interface InvalidRequestErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
  export interface AuthenticationErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
  export interface RateLimitErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
  export interface QuotaExhaustedErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
  export interface InternalProviderErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
  export interface UnknownErrorMetadata extends ProviderMetadata {
    /** Set on errors made from a Mistral (or OpenAI-compatible) answer. */
    readonly mistral?: MistralErrorMetadata | null
  }
}

/**
 * Options of `make` and `layer`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** Sent as `Authorization: Bearer <key>`. Leave unset for local servers without auth. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Base URL, up to and including the version segment. Defaults to `https://api.mistral.ai/v1`. */
  readonly apiUrl?: string | undefined
  /** Defaults to `"mistral"`. */
  readonly flavour?: Flavour | undefined
  /** Transforms the underlying `HttpClient` (applied after the base URL and auth headers are set). */
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
  /** Retry settings, or `false` to never retry. */
  readonly retry?: RetryOptions | false | undefined
}

/**
 * The client service.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly flavour: Flavour
  /** Sends a non-streaming request (`stream: false`) and decodes the answer. */
  readonly createChatCompletion: (
    request: ChatCompletionRequest
  ) => Effect.Effect<ChatCompletionResponse, AiError.AiError>
  /**
   * Sends a streaming request (`stream: true`) and yields the decoded `data:` chunks until `data: [DONE]`.
   * Fails if the connection ends before `[DONE]` or a finish reason.
   */
  readonly createChatCompletionStream: (
    request: ChatCompletionRequest
  ) => Stream.Stream<ChatCompletionChunk, AiError.AiError>
}

/**
 * @since 0.1.0
 * @category Models
 */
export class MistralClient extends Context.Service<MistralClient, Service>()("@parley/mistral/MistralClient") {}

/**
 * Builds the client on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (httpClient) =>
    Internal.make({
      httpClient,
      apiKey: options.apiKey,
      apiUrl: options.apiUrl ?? "https://api.mistral.ai/v1",
      flavour: options.flavour ?? "mistral",
      transformClient: options.transformClient,
      retry: options.retry
    }))

/**
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options = {}): Layer.Layer<MistralClient, never, HttpClient.HttpClient> =>
  Layer.effect(MistralClient, make(options))

/**
 * Like `layer`, with settings read from `effect` `Config`. By default it reads `MISTRAL_API_KEY` (optional,
 * redacted), `MISTRAL_BASE_URL` (optional) and `MISTRAL_FLAVOUR` (`mistral` or `compat`, optional).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (options: {
  readonly apiKey?: Config.Config<Redacted.Redacted | undefined> | undefined
  readonly apiUrl?: Config.Config<string | undefined> | undefined
  readonly flavour?: Config.Config<Flavour | undefined> | undefined
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
  readonly retry?: RetryOptions | false | undefined
} = {}): Layer.Layer<MistralClient, Config.ConfigError, HttpClient.HttpClient> =>
  Layer.effect(
    MistralClient,
    Effect.gen(function*() {
      const apiKey = yield* (options.apiKey ?? optional(Config.Redacted("MISTRAL_API_KEY")))
      const apiUrl = yield* (options.apiUrl ?? optional(Config.String("MISTRAL_BASE_URL")))
      const flavour = yield* (options.flavour ?? optional(Config.Literals(["mistral", "compat"], "MISTRAL_FLAVOUR")))
      return yield* make({ apiKey, apiUrl, flavour, transformClient: options.transformClient, retry: options.retry })
    })
  )
