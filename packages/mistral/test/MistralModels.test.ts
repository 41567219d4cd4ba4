/**
 * Model selection: which names resolve to which endpoint, what an agent is told when something is missing, and
 * that one model is built per name. Requests go to fake servers on 127.0.0.1.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec } from "@parley/core"
import { Models } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import type { LanguageModel } from "effect/ai"
import * as MistralModels from "../src/MistralModels.js"
import * as FakeServer from "./fixtures/FakeServer.js"
import { FAST_RETRY } from "./fixtures/Layers.js"
import * as MistralRules from "./fixtures/MistralRules.js"
import * as Scripts from "./fixtures/Scripts.js"
import { collect, summarize } from "./fixtures/Tools.js"

const agent = (model: string | undefined) => AgentSpec.make({ name: "assistant", model, instructions: "Be brief." })

/** The text a model streams for "Hi". */
const streamedText = (model: LanguageModel.LanguageModel) =>
  Effect.map(
    collect(model.streamText({ prompt: "Hi" })),
    (parts) => summarize(parts).filter((part) => part.startsWith("text-delta:")).join("|")
  )

const issuesOf = (resolver: MistralModels.Service, model: string | undefined) =>
  Effect.map(Effect.flip(resolver.resolve(agent(model))), (error) => {
    assert.strictEqual(error._tag, "AgentInvalid")
    assert.strictEqual(error.agent, "assistant")
    return error.issues
  })

describe("MistralModels", () => {
  it.effect("a Mistral name with a key resolves to a working Mistral model", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: "mistral-key", validate: true })
      server.enqueue(Scripts.mistralText(["Hel", "lo", "!"]))
      const resolver = yield* MistralModels.make({
        apiKey: Redacted.make("mistral-key"),
        apiUrl: `${server.url}/v1`,
        retry: FAST_RETRY
      })
      const model = yield* resolver.resolve(agent("mistral-large-latest"))
      assert.strictEqual(yield* streamedText(model), "text-delta:Hel|text-delta:lo|text-delta:!")
      const request = server.requests[0]
      assert.strictEqual(request.headers.authorization, "Bearer mistral-key")
      assert.strictEqual(request.body.model, "mistral-large-latest")
      assert.strictEqual(request.body.stream, true)
      assert.isUndefined(request.body.stream_options) // Mistral's closed schema: no OpenAI-only fields
      assert.deepStrictEqual(MistralRules.validate(request.body), [])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("every Mistral model family resolves; non-chat Mistral models do not", () =>
    Effect.gen(function*() {
      const resolver = yield* MistralModels.make({ apiKey: Redacted.make("k"), apiUrl: "http://127.0.0.1:9/v1" })
      for (
        const name of [
          "mistral-small-latest",
          "ministral-8b-latest",
          "codestral-2508",
          "magistral-medium-latest",
          "devstral-latest",
          "pixtral-large-2411",
          "open-mistral-nemo"
        ]
      ) {
        assert.isTrue(MistralModels.isMistralModel(name), name)
        yield* resolver.resolve(agent(name))
      }
      for (const name of ["mistral-embed", "codestral-embed", "mistral-ocr-latest", "mistral-moderation-latest"]) {
        assert.isFalse(MistralModels.isMistralModel(name), name)
        assert.deepStrictEqual(yield* issuesOf(resolver, name), [
          `${name} is not a Mistral chat model (embeddings, OCR and moderation models cannot run agents)`
        ])
      }
      assert.isFalse(MistralModels.isMistralModel("mistral-"))
      assert.isFalse(MistralModels.isMistralModel("gpt-4o"))
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("a Mistral name without a key fails with AgentInvalid naming the variable, and sends nothing", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      const resolver = yield* MistralModels.make({ apiUrl: `${server.url}/v1`, compatBaseUrl: `${server.url}/v1` })
      const error = yield* Effect.flip(resolver.resolve(agent("mistral-large-latest")))
      assert.strictEqual(error._tag, "AgentInvalid")
      assert.deepStrictEqual(error.issues, ["set MISTRAL_API_KEY to use mistral-large-latest"])
      assert.include(error.message, "set MISTRAL_API_KEY to use mistral-large-latest")
      // An empty key counts as no key.
      const empty = yield* MistralModels.make({ apiKey: Redacted.make("") })
      assert.deepStrictEqual(yield* issuesOf(empty, "codestral-latest"), [
        "set MISTRAL_API_KEY to use codestral-latest"
      ])
      assert.strictEqual(server.requests.length, 0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("openai-compat:<model> goes to the compat base URL with the model name and OpenAI's field names", () =>
    Effect.gen(function*() {
      const mistral = yield* FakeServer.make()
      const local = yield* FakeServer.make({ apiKey: "local-key" })
      local.enqueue(
        Scripts.sse([
          Scripts.chunk({ role: "assistant", content: "" }, { model: "llama3" }),
          Scripts.chunk({ content: "Hi " }, { model: "llama3" }),
          Scripts.chunk({ content: "there" }, { model: "llama3" }),
          Scripts.chunk({}, { finish: "stop", model: "llama3" }),
          Scripts.usageChunk({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }),
          "[DONE]"
        ])
      )
      const resolver = yield* MistralModels.make({
        apiKey: Redacted.make("mistral-key"),
        apiUrl: `${mistral.url}/v1`,
        compatBaseUrl: `${local.url}/v1`,
        compatApiKey: Redacted.make("local-key"),
        config: { max_tokens: 64, random_seed: 7 },
        retry: FAST_RETRY
      })
      const model = yield* resolver.resolve(agent("openai-compat:llama3"))
      assert.strictEqual(yield* streamedText(model), "text-delta:Hi |text-delta:there")
      assert.strictEqual(mistral.requests.length, 0)
      const request = local.requests[0]
      assert.strictEqual(request.path, "/v1/chat/completions")
      assert.strictEqual(request.headers.authorization, "Bearer local-key")
      assert.deepStrictEqual(request.body, {
        model: "llama3",
        messages: [{ role: "user", content: "Hi" }],
        max_completion_tokens: 64,
        seed: 7,
        stream: true,
        stream_options: { include_usage: true }
      })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("openai-compat: without a base URL, or without a model name, fails with what is missing", () =>
    Effect.gen(function*() {
      const resolver = yield* MistralModels.make({ apiKey: Redacted.make("k") })
      assert.deepStrictEqual(yield* issuesOf(resolver, "openai-compat:llama3"), [
        "set OPENAI_COMPAT_BASE_URL to use openai-compat:llama3"
      ])
      const configured = yield* MistralModels.make({ compatBaseUrl: "http://127.0.0.1:9/v1" })
      assert.deepStrictEqual(yield* issuesOf(configured, "openai-compat:"), [
        "name the model after \"openai-compat:\" (e.g. \"openai-compat:llama3\")"
      ])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("unknown names and agents without a model fail with AgentInvalid", () =>
    Effect.gen(function*() {
      const resolver = yield* MistralModels.make({
        apiKey: Redacted.make("k"),
        compatBaseUrl: "http://127.0.0.1:9/v1"
      })
      assert.deepStrictEqual(yield* issuesOf(resolver, "gpt-4o"), [
        "no provider for model \"gpt-4o\": use a Mistral model (mistral-*, ministral-*, codestral-*, magistral-*, " +
        "devstral-*, pixtral-*, open-mistral-*) or \"openai-compat:<model>\""
      ])
      assert.deepStrictEqual(yield* issuesOf(resolver, "llama3"), [
        "no provider for model \"llama3\": use a Mistral model (mistral-*, ministral-*, codestral-*, magistral-*, " +
        "devstral-*, pixtral-*, open-mistral-*) or \"openai-compat:<model>\""
      ])
      assert.deepStrictEqual(yield* issuesOf(resolver, undefined), [
        "agent assistant names no model: set its model to a Mistral model (e.g. \"mistral-large-latest\") " +
        "or to \"openai-compat:<model>\""
      ])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("builds one model per name and reuses it (and its client) for every agent that names it", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: "k" })
      server.enqueue(Scripts.mistralText(["one"]), Scripts.mistralText(["two"]))
      const resolver = yield* MistralModels.make({
        apiKey: Redacted.make("k"),
        apiUrl: `${server.url}/v1`,
        compatBaseUrl: `${server.url}/v1`,
        retry: FAST_RETRY
      })
      const first = yield* resolver.resolve(agent("mistral-small-latest"))
      const again = yield* resolver.resolve(AgentSpec.make({ name: "other", model: "mistral-small-latest" }))
      const concurrent = yield* Effect.all(
        [resolver.resolve(agent("codestral-latest")), resolver.resolve(agent("codestral-latest"))],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(again, first)
      assert.strictEqual(concurrent[0], concurrent[1])
      assert.notStrictEqual(concurrent[0], first)
      assert.strictEqual(
        yield* resolver.resolve(agent("openai-compat:llama3")),
        yield* resolver.resolve(agent("openai-compat:llama3"))
      )
      assert.notStrictEqual(yield* resolver.resolve(agent("openai-compat:llama3")), first)
      // The cached model still works, request after request.
      assert.strictEqual(yield* streamedText(first), "text-delta:one")
      assert.strictEqual(yield* streamedText(again), "text-delta:two")
      assert.deepStrictEqual(server.requests.map((request) => request.body.model), [
        "mistral-small-latest",
        "mistral-small-latest"
      ])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("fromConfig reads MISTRAL_API_KEY, MISTRAL_BASE_URL, OPENAI_COMPAT_BASE_URL, OPENAI_COMPAT_API_KEY", () =>
    Effect.gen(function*() {
      const mistral = yield* FakeServer.make({ apiKey: "from-env" })
      const local = yield* FakeServer.make({ apiKey: "local-env" })
      mistral.enqueue(Scripts.mistralText(["from Mistral"]))
      local.enqueue(Scripts.mistralText(["from local"]))
      const env = ConfigProvider.fromEnv({
        env: {
          MISTRAL_API_KEY: "from-env",
          MISTRAL_BASE_URL: `${mistral.url}/v1`,
          OPENAI_COMPAT_BASE_URL: `${local.url}/v1`,
          OPENAI_COMPAT_API_KEY: "local-env"
        }
      })
      const resolver = yield* MistralModels.fromConfig({ retry: FAST_RETRY }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, env)
      )
      assert.strictEqual(
        yield* streamedText(yield* resolver.resolve(agent("mistral-medium-latest"))),
        "text-delta:from Mistral"
      )
      assert.strictEqual(
        yield* streamedText(yield* resolver.resolve(agent("openai-compat:qwen3"))),
        "text-delta:from local"
      )
      assert.strictEqual(mistral.requests[0].headers.authorization, "Bearer from-env")
      assert.strictEqual(local.requests[0].headers.authorization, "Bearer local-env")
      assert.strictEqual(local.requests[0].body.model, "qwen3")
      assert.strictEqual(
        resolver.describe("openai-compat:qwen3"),
        `qwen3 on an OpenAI-compatible server (${local.url}/v1)`
      )

      // With nothing set, nothing resolves, and the issues say which variable to set.
      const none = yield* MistralModels.fromConfig().pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: {} }))
      )
      assert.deepStrictEqual(yield* issuesOf(none, "mistral-large-latest"), [
        "set MISTRAL_API_KEY to use mistral-large-latest"
      ])
      assert.deepStrictEqual(yield* issuesOf(none, "openai-compat:qwen3"), [
        "set OPENAI_COMPAT_BASE_URL to use openai-compat:qwen3"
      ])
      assert.strictEqual(
        none.describe("mistral-large-latest"),
        "mistral-large-latest on Mistral (https://api.mistral.ai/v1)"
      )
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("plugs into the runtime's Models: Models.orElse falls back to another resolver", () =>
    Effect.gen(function*() {
      const scripted = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("scripted"))
      const mistral = yield* MistralModels.make({ apiKey: Redacted.make("k"), apiUrl: "http://127.0.0.1:9/v1" })
      const models = Models.orElse(mistral, Models.byName({ scripted: scripted.languageModel }))
      assert.strictEqual(yield* models.resolve(agent("scripted")), scripted.languageModel)
      assert.strictEqual(
        yield* models.resolve(agent("mistral-large-latest")),
        yield* mistral.resolve(agent("mistral-large-latest"))
      )
      const error = yield* Effect.flip(Models.orElse(mistral).resolve(agent("gpt-4o")))
      assert.strictEqual(error._tag, "AgentInvalid")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("the README wiring: a Models layer from fromConfig", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: "from-env", validate: true })
      server.enqueue(Scripts.mistralText(["wired"]))
      const env = ConfigProvider.fromEnv({ env: { MISTRAL_API_KEY: "from-env", MISTRAL_BASE_URL: `${server.url}/v1` } })
      const ModelsLive = Layer.unwrap(Effect.map(MistralModels.fromConfig(), Models.layer)).pipe(
        Layer.provide(NodeHttpClient.layerUndici),
        Layer.provide(ConfigProvider.layer(env))
      )
      const text = yield* Effect.flatMap(Models.Models, (models) => models.resolve(agent("mistral-small-latest"))).pipe(
        Effect.flatMap(streamedText),
        Effect.provide(ModelsLive)
      )
      assert.strictEqual(text, "text-delta:wired")
    }))

  it("describe says which model and provider a name selects", () => {
    assert.strictEqual(MistralModels.describe("mistral-large-latest"), "mistral-large-latest on Mistral")
    assert.strictEqual(MistralModels.describe("openai-compat:llama3"), "llama3 on an OpenAI-compatible server")
    assert.strictEqual(MistralModels.describe("gpt-4o"), "gpt-4o (not a Mistral or openai-compat: model)")
    assert.strictEqual(MistralModels.describe(undefined), "no model")
  })
})
