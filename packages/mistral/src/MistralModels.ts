/**
 * Model selection for Parley agents: resolves the model an agent names to a Mistral `LanguageModel`. It has the
 * shape of the runtime's `Models.Service` (`resolve(agent)`), so it plugs into `Models.layer` or `Models.orElse`.
 *
 * - `mistral-*`, `ministral-*`, `codestral-*`, `magistral-*`, `devstral-*`, `pixtral-*` and `open-mistral-*` go to
 *   Mistral (needs an API key: `MISTRAL_API_KEY`);
 * - `openai-compat:<model>` goes to an OpenAI-compatible server (vLLM, Ollama, llama.cpp) at a configured base URL
 *   (`OPENAI_COMPAT_BASE_URL`, optional `OPENAI_COMPAT_API_KEY`), asking it for `<model>`;
 * - anything else, or a name whose endpoint is not configured, fails with `AgentInvalid` saying what is missing.
 *
 * One client per endpoint; each model is built once per name and reused.
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { MistralModels } from "@parley/mistral"
 * import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
 * import { Effect, Layer } from "effect"
 *
 * // MISTRAL_API_KEY, OPENAI_COMPAT_BASE_URL, OPENAI_COMPAT_API_KEY from the environment
 * const ModelsLive = Layer.unwrap(Effect.map(MistralModels.fromConfig(), Models.layer)).pipe(
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 *
 * const Runtime = LocalTransport.layer.pipe(
 *   Layer.provide([
 *     SessionStore.layerMemory,
 *     Connectors.layer([Connectors.demoMailbox()]),
 *     RuntimeTools.layerEmpty,
 *     ModelsLive
 *   ])
 * )
 * ```
 *
 * @since 0.1.0
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentInvalid } from "@parley/core/ParleyError"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as Redacted from "effect/Redacted"
import { optional } from "./internal/config.js"
import * as MistralClient from "./MistralClient.js"
import type * as MistralConfig from "./MistralConfig.js"
import * as MistralLanguageModel from "./MistralLanguageModel.js"

/**
 * The prefix of model names served by an OpenAI-compatible server: `openai-compat:llama3` asks it for `llama3`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const COMPAT_PREFIX = "openai-compat:"

/**
 * The name prefixes of Mistral's chat models (reference: Mistral's model list, current and deprecated).
 *
 * @since 0.1.0
 * @category Utils
 */
export const MISTRAL_PREFIXES: ReadonlyArray<string> = [
  "mistral-",
  "ministral-",
  "codestral-",
  "magistral-",
  "devstral-",
  "pixtral-",
  "open-mistral-"
]

/** Mistral models that are not chat models (embeddings, OCR, moderation). */
const NOT_CHAT = /(^|-)(embed|ocr|moderation)(-|$)/

/**
 * The resolver: the runtime's `Models.Service` shape, plus `describe`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The model for an agent, or `AgentInvalid` saying what is missing. */
  readonly resolve: (agent: AgentSpec) => Effect.Effect<LanguageModel.LanguageModel, AgentInvalid>
  /** Which model and endpoint a model name selects, for people: `"mistral-large-latest on Mistral (…)"`. */
  readonly describe: (model: string | undefined) => string
}

/**
 * Options of `make`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** Mistral's API key. Without it, Mistral model names fail to resolve. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Mistral's base URL, up to and including `/v1`. Defaults to `https://api.mistral.ai/v1`. */
  readonly apiUrl?: string | undefined
  /** The base URL of the OpenAI-compatible server, up to and including `/v1`. Without it, `openai-compat:` fails. */
  readonly compatBaseUrl?: string | undefined
  /** The OpenAI-compatible server's key, if it wants one. */
  readonly compatApiKey?: Redacted.Redacted | undefined
  /** Default request parameters for every model (overridable per request with `MistralConfig.withConfigOverride`). */
  readonly config?: MistralConfig.MistralConfig.Service | undefined
  /** Retry settings of both clients. */
  readonly retry?: MistralClient.RetryOptions | false | undefined
  /** Transforms the `HttpClient` of both clients. */
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/**
 * Whether `name` is a Mistral chat model name (`mistral-large-latest`, `codestral-2508`, ...).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isMistralModel = (name: string): boolean =>
  MISTRAL_PREFIXES.some((prefix) => name.startsWith(prefix) && name.length > prefix.length) && !NOT_CHAT.test(name)

/**
 * Whether `name` selects an OpenAI-compatible server (`openai-compat:<model>`).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isCompatModel = (name: string): boolean => name.startsWith(COMPAT_PREFIX)

const DEFAULT_API_URL = "https://api.mistral.ai/v1"

const describeWith = (model: string | undefined, urls: { readonly mistral?: string; readonly compat?: string }) => {
  if (model === undefined) return "no model"
  if (isCompatModel(model)) {
    const name = model.slice(COMPAT_PREFIX.length)
    return `${name} on an OpenAI-compatible server${urls.compat === undefined ? "" : ` (${urls.compat})`}`
  }
  if (isMistralModel(model)) return `${model} on Mistral${urls.mistral === undefined ? "" : ` (${urls.mistral})`}`
  return `${model} (not a Mistral or openai-compat: model)`
}

/**
 * Says which model and provider a model name selects: `"mistral-large-latest on Mistral"`,
 * `"llama3 on an OpenAI-compatible server"`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describe = (model: string | undefined): string => describeWith(model, {})

const nonEmpty = (key: Redacted.Redacted | undefined) =>
  key === undefined || Redacted.value(key).length === 0 ? undefined : key

/**
 * Builds the resolver on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const apiKey = nonEmpty(options.apiKey)
    const compatApiKey = nonEmpty(options.compatApiKey)
    const apiUrl = options.apiUrl === undefined || options.apiUrl === "" ? DEFAULT_API_URL : options.apiUrl
    const compatBaseUrl = options.compatBaseUrl === "" ? undefined : options.compatBaseUrl
    const common = { retry: options.retry, transformClient: options.transformClient }
    const mistral = apiKey === undefined
      ? undefined
      : yield* MistralClient.make({ ...common, apiKey, apiUrl, flavour: "mistral" })
    const compat = compatBaseUrl === undefined
      ? undefined
      : yield* MistralClient.make({ ...common, apiKey: compatApiKey, apiUrl: compatBaseUrl, flavour: "compat" })

    const cache = new Map<string, LanguageModel.LanguageModel>()
    const cached = (key: string, client: MistralClient.Service, model: string) =>
      Effect.suspend(() => {
        const hit = cache.get(key)
        if (hit !== undefined) return Effect.succeed(hit)
        return MistralLanguageModel.make({ model, config: options.config }).pipe(
          Effect.provideService(MistralClient.MistralClient, client),
          Effect.map((built) => {
            // Two first resolutions may race: the first one stored wins, so every caller gets the same model.
            const stored = cache.get(key)
            if (stored !== undefined) return stored
            cache.set(key, built)
            return built
          })
        )
      })

    const resolve = (agent: AgentSpec): Effect.Effect<LanguageModel.LanguageModel, AgentInvalid> => {
      const fail = (issue: string) =>
        Effect.fail(
          new AgentInvalid({ module: "MistralModels", method: "resolve", agent: agent.name, issues: [issue] })
        )
      const name = agent.model
      if (name === undefined || name.length === 0) {
        return fail(
          `agent ${agent.name} names no model: set its model to a Mistral model (e.g. "mistral-large-latest") ` +
            `or to "${COMPAT_PREFIX}<model>"`
        )
      }
      if (isCompatModel(name)) {
        const model = name.slice(COMPAT_PREFIX.length)
        if (model.length === 0) return fail(`name the model after "${COMPAT_PREFIX}" (e.g. "${COMPAT_PREFIX}llama3")`)
        if (compat === undefined) return fail(`set OPENAI_COMPAT_BASE_URL to use ${name}`)
        return cached(name, compat, model)
      }
      if (isMistralModel(name)) {
        if (mistral === undefined) return fail(`set MISTRAL_API_KEY to use ${name}`)
        return cached(name, mistral, name)
      }
      if (MISTRAL_PREFIXES.some((prefix) => name.startsWith(prefix))) {
        return fail(`${name} is not a Mistral chat model (embeddings, OCR and moderation models cannot run agents)`)
      }
      return fail(
        `no provider for model ${JSON.stringify(name)}: use a Mistral model ` +
          `(${MISTRAL_PREFIXES.map((prefix) => `${prefix}*`).join(", ")}) or "${COMPAT_PREFIX}<model>"`
      )
    }

    return {
      resolve,
      describe: (model) =>
        describeWith(model, {
          mistral: apiUrl,
          ...(compatBaseUrl === undefined ? {} : { compat: compatBaseUrl })
        })
    }
  })

/**
 * Like `make`, with the endpoints read from `effect` `Config`. By default: `MISTRAL_API_KEY` (redacted),
 * `MISTRAL_BASE_URL`, `OPENAI_COMPAT_BASE_URL` and `OPENAI_COMPAT_API_KEY` (redacted), all optional.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fromConfig = (options: {
  readonly apiKey?: Config.Config<Redacted.Redacted | undefined> | undefined
  readonly apiUrl?: Config.Config<string | undefined> | undefined
  readonly compatBaseUrl?: Config.Config<string | undefined> | undefined
  readonly compatApiKey?: Config.Config<Redacted.Redacted | undefined> | undefined
  readonly config?: MistralConfig.MistralConfig.Service | undefined
  readonly retry?: MistralClient.RetryOptions | false | undefined
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
} = {}): Effect.Effect<Service, Config.ConfigError, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const apiKey = yield* (options.apiKey ?? optional(Config.Redacted("MISTRAL_API_KEY")))
    const apiUrl = yield* (options.apiUrl ?? optional(Config.String("MISTRAL_BASE_URL")))
    const compatBaseUrl = yield* (options.compatBaseUrl ?? optional(Config.String("OPENAI_COMPAT_BASE_URL")))
    const compatApiKey = yield* (options.compatApiKey ?? optional(Config.Redacted("OPENAI_COMPAT_API_KEY")))
    return yield* make({
      apiKey,
      apiUrl,
      compatBaseUrl,
      compatApiKey,
      config: options.config,
      retry: options.retry,
      transformClient: options.transformClient
    })
  })
