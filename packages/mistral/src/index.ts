/**
 * The HTTP client for Mistral's `POST /v1/chat/completions` and for OpenAI-compatible servers (vLLM, Ollama,
 * llama.cpp), on Effect's `HttpClient` (`effect/http`), with retries on 429 / 5xx honouring `Retry-After`.
 *
 * @since 0.1.0
 */
export * as MistralClient from "./MistralClient.js"

/**
 * Per-request configuration for the Mistral provider (sampling parameters, output caps, `reasoning_effort`,
 * reasoning replay, compat-only settings, extra body fields, `HttpClient` transform), set with `withConfigOverride`.
 *
 * @since 0.1.0
 */
export * as MistralConfig from "./MistralConfig.js"

/**
 * An `effect/ai` `LanguageModel` backed by Mistral chat completions or an OpenAI-compatible server.
 *
 * @since 0.1.0
 */
export * as MistralLanguageModel from "./MistralLanguageModel.js"

/**
 * Model selection: resolves the model an agent names (`mistral-large-latest`, `openai-compat:llama3`) to a
 * `LanguageModel`, in the shape of the runtime's `Models.Service`, with endpoints from options or the environment.
 *
 * @since 0.1.0
 */
export * as MistralModels from "./MistralModels.js"
