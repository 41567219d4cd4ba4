/**
 * The GenAI span attributes (OpenTelemetry semantic conventions, as `effect/ai`'s `Telemetry` names them) that the
 * provider sets on the span `LanguageModel` passes to it, for `generateText` and `streamText`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LanguageModel } from "effect/ai"
import * as FakeServer from "./fixtures/FakeServer.js"
import * as Layers from "./fixtures/Layers.js"
import * as Scripts from "./fixtures/Scripts.js"
import { collect } from "./fixtures/Tools.js"
import * as Tracing from "./fixtures/Tracing.js"

const config = {
  temperature: 0.3,
  top_p: 0.9,
  max_tokens: 64,
  random_seed: 42,
  stop: ["\n\n"],
  presence_penalty: 0.5,
  frequency_penalty: 0.25
}

const requestAttributes = {
  "gen_ai.operation.name": "chat",
  // Set by Effect 4's `LanguageModel` itself, from the request's response format.
  "gen_ai.output.type": "text",
  "gen_ai.request.temperature": 0.3,
  "gen_ai.request.top_p": 0.9,
  "gen_ai.request.max_tokens": 64,
  "gen_ai.request.seed": 42,
  "gen_ai.request.stop_sequences": ["\n\n"],
  "gen_ai.request.presence_penalty": 0.5,
  "gen_ai.request.frequency_penalty": 0.25
}

describe("MistralLanguageModel telemetry", () => {
  it.effect("generateText: provider name, operation, request parameters, response id / model, finish reasons, usage", () =>
    Effect.gen(function*() {
      const tracing = Tracing.make()
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.completion({ content: "Hello!" }, "stop"))
      yield* LanguageModel.generateText({ prompt: "Hi" }).pipe(
        Effect.provide(Layers.model(server, { model: "mistral-small-latest", config })),
        Effect.provide(tracing.layer)
      )
      assert.deepStrictEqual(tracing.genAi("LanguageModel.generateText"), [{
        "gen_ai.provider.name": "mistral_ai",
        ...requestAttributes,
        "gen_ai.request.model": "mistral-small-latest",
        "gen_ai.response.id": "7cbd8962041442459eb3636e1e3cbf10",
        "gen_ai.response.model": "mistral-large-latest",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 94,
        "gen_ai.usage.output_tokens": 30
      }])
    }))

  it.effect("streamText: the same attributes, from the chunks as they arrive", () =>
    Effect.gen(function*() {
      const tracing = Tracing.make()
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.mistralText(["Hel", "lo"]))
      yield* collect(LanguageModel.streamText({ prompt: "Hi" })).pipe(
        Effect.provide(Layers.model(server, { model: "mistral-large-latest", config })),
        Effect.provide(tracing.layer)
      )
      assert.deepStrictEqual(tracing.genAi("LanguageModel.streamText"), [{
        "gen_ai.provider.name": "mistral_ai",
        ...requestAttributes,
        "gen_ai.request.model": "mistral-large-latest",
        "gen_ai.response.id": Scripts.CHUNK_ID,
        "gen_ai.response.model": "mistral-small-latest",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 13,
        "gen_ai.usage.output_tokens": 8
      }])
    }))

  it.effect("compat flavour: the OpenAI dialect, its field names, and usage from the trailing usage chunk", () =>
    Effect.gen(function*() {
      const tracing = Tracing.make()
      const server = yield* FakeServer.make()
      server.enqueue(Scripts.sse([
        Scripts.chunk({ role: "assistant", content: null }, { model: "local", id: "chatcmpl-42" }),
        Scripts.chunk({ content: "Hi" }, { model: "local", id: "chatcmpl-42" }),
        Scripts.chunk({}, { finish: "stop", model: "local", id: "chatcmpl-42", usage: null }),
        Scripts.usageChunk({ prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 }),
        "[DONE]"
      ]))
      yield* collect(LanguageModel.streamText({ prompt: "Hi" })).pipe(
        Effect.provide(Layers.model(server, { flavour: "compat", model: "qwen3", config })),
        Effect.provide(tracing.layer)
      )
      assert.deepStrictEqual(tracing.genAi("LanguageModel.streamText"), [{
        // OpenTelemetry: the provider "as identified by the client instrumentation" (an OpenAI-dialect client).
        "gen_ai.provider.name": "openai",
        ...requestAttributes,
        "gen_ai.request.model": "qwen3",
        "gen_ai.response.id": "chatcmpl-42",
        "gen_ai.response.model": "local",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 20
      }])
    }))
})
