import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, ConfigProvider, Duration, Effect, Fiber, Layer, Queue, Stream } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import { TestClock } from "effect/testing"
import * as MistralClient from "../src/MistralClient.js"
import * as MistralLanguageModel from "../src/MistralLanguageModel.js"
import * as FakeServer from "./fixtures/FakeServer.js"
import * as Layers from "./fixtures/Layers.js"
import * as Scripts from "./fixtures/Scripts.js"
import { collect, summarize } from "./fixtures/Tools.js"

const statusOf = (error: AiError.AiError) => "http" in error.reason ? error.reason.http?.response?.status : undefined

const bodyOf = (error: AiError.AiError) => "http" in error.reason ? error.reason.http?.body : undefined

/** What the provider says about the server's answer (`metadata.mistral`), on the reasons made from one. */
const mistralOf = (error: AiError.AiError): MistralClient.MistralErrorMetadata | undefined => {
  const reason = error.reason
  switch (reason._tag) {
    case "InvalidRequestError":
    case "AuthenticationError":
    case "RateLimitError":
    case "QuotaExhaustedError":
    case "InternalProviderError":
    case "UnknownError":
      return reason.metadata.mistral ?? undefined
    default:
      return undefined
  }
}

const descriptionOf = (error: AiError.AiError) => mistralOf(error)?.description ?? error.reason._tag

/**
 * Effect 4's TestClock does not list its pending sleeps: a clock over it records the wake-up time of every sleep of
 * the effects it is given to.
 */
const recordSleeps = Effect.gen(function*() {
  const clock = yield* Clock.Clock
  const sleeps: Array<number> = []
  const recording: Clock.Clock = {
    ...clock,
    sleep: (duration) =>
      Effect.suspend(() => {
        sleeps.push(clock.currentTimeMillisUnsafe() + Duration.toMillis(duration))
        return clock.sleep(duration)
      })
  }
  return {
    sleeps,
    /** Waits (in real time) until `n` sleeps have started; their wake-up times. */
    awaitSleeps: (n: number) =>
      Effect.gen(function*() {
        while (sleeps.length < n) {
          yield* TestClock.withLive(Effect.sleep("2 millis"))
        }
        return sleeps.slice(0, n)
      }),
    record: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provideService(self, Clock.Clock, recording)
  }
})

const generate = (server: FakeServer.FakeServer, options: Layers.Options = {}) =>
  LanguageModel.generateText({ prompt: "Hi" }).pipe(Effect.provide(Layers.model(server, options)))

describe("MistralClient errors", () => {
  it.live(
    "401 becomes an AuthenticationError with status and body, and is not retried",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make({ apiKey: "right-key" })
        const error = yield* Effect.flip(generate(server, { apiKey: "wrong-key" }))
        assert.strictEqual(error.reason._tag, "AuthenticationError")
        assert.strictEqual(statusOf(error), 401)
        assert.include(bodyOf(error) ?? "", "\"message\":\"Unauthorized\"")
        assert.include(descriptionOf(error), "status 401: Unauthorized")
        assert.include(descriptionOf(error), "mistral-correlation-id")
        assert.include(error.message, "status 401: Unauthorized")
        // Effect 4's AiError keeps no request: the key cannot leak through the error.
        assert.notInclude(JSON.stringify(error) + error.message, "wrong-key")
        assert.strictEqual(server.requests.length, 1)
      }),
    { timeout: 5_000 }
  )

  it.live(
    "422 extra_forbidden keeps the raw body, describes the field, and is not retried",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        const reply = FakeServer.unprocessable(["stream_options", "include_usage"])
        server.enqueue(reply, Scripts.completion({ content: "never" }, "stop"))
        const error = yield* Effect.flip(generate(server))
        assert.strictEqual(statusOf(error), 422)
        assert.strictEqual(error.reason._tag, "InvalidRequestError")
        if (reply._tag !== "Body") return assert.fail("unexpected reply")
        assert.strictEqual(bodyOf(error), reply.body)
        assert.include(
          descriptionOf(error),
          "Extra inputs are not permitted at body.stream_options.include_usage [extra_forbidden]"
        )
        assert.strictEqual(server.requests.length, 1)
      }),
    { timeout: 5_000 }
  )

  it.live(
    "400 and legacy bodies (JSON-string message, integer code, OpenAI envelope) are described",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        server.enqueue(
          FakeServer.jsonReply(400, {
            object: "error",
            message: "Unexpected role 'user' after role 'tool'",
            type: "invalid_request_message_order",
            param: null,
            code: "3230"
          }),
          FakeServer.jsonReply(422, {
            object: "error",
            message: JSON.stringify({ detail: [{ type: "missing", loc: ["body", "model"], msg: "Field required" }] }),
            type: "internal_error_proxy",
            code: 1000
          }),
          FakeServer.jsonReply(404, { error: { message: "model 'x' not found", type: "not_found_error", code: null } })
        )
        const descriptions: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const error = yield* Effect.flip(generate(server))
          descriptions.push(descriptionOf(error))
        }
        assert.include(descriptions[0], "status 400: Unexpected role 'user' after role 'tool'")
        assert.include(descriptions[0], "code: 3230")
        assert.include(descriptions[1], "Field required at body.model [missing]")
        assert.include(descriptions[1], "code: 1000")
        assert.include(descriptions[2], "status 404: model 'x' not found (type: not_found_error)")
        assert.strictEqual(server.requests.length, 3)
      }),
    { timeout: 5_000 }
  )
})

describe("MistralClient retries", () => {
  it.effect("a 429 waits exactly Retry-After seconds before retrying", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      const { awaitSleeps, record } = yield* recordSleeps
      server.enqueue(FakeServer.rateLimited({ retryAfter: "5" }), Scripts.completion({ content: "after wait" }, "stop"))
      const fiber = yield* Effect.forkChild(
        record(generate(server, { retry: { maxRetries: 2, baseDelay: "10 millis" } }))
      )
      yield* Queue.take(server.received)
      assert.deepStrictEqual(yield* awaitSleeps(1), [5_000])
      yield* TestClock.adjust("4999 millis")
      assert.strictEqual(server.requests.length, 1)
      yield* TestClock.adjust("1 millis")
      const response = yield* Fiber.join(fiber)
      assert.strictEqual(response.text, "after wait")
      assert.strictEqual(server.requests.length, 2)
    }))

  it.effect(
    "a Retry-After longer than the policy's maxDelay is not waited for: the 429 surfaces at once",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        const { record, sleeps } = yield* recordSleeps
        const inAnHour = new Date(Date.now() + 3_600_000).toUTCString()
        server.enqueue(
          FakeServer.rateLimited({ retryAfter: "3600" }),
          FakeServer.rateLimited({ retryAfter: inAnHour }),
          FakeServer.rateLimited({ retryAfter: "3600" }),
          Scripts.completion({ content: "never" }, "stop")
        )
        const retry = { maxRetries: 3, baseDelay: "10 millis", maxDelay: "30 seconds" } as const
        // Under the TestClock an hour-long sleep would never end: these complete only if nothing sleeps.
        for (const _ of [1, 2]) {
          const error = yield* Effect.flip(record(generate(server, { retry })))
          assert.strictEqual(statusOf(error), 429)
          assert.strictEqual(error.reason._tag, "RateLimitError")
          assert.include(descriptionOf(error), "exceeds the retry policy")
          assert.isTrue(Duration.toMillis(error.retryAfter ?? Duration.zero) >= 3_500_000)
        }
        const streamError = yield* Effect.flip(collect(LanguageModel.streamText({ prompt: "Hi" }))).pipe(
          Effect.provide(Layers.model(server, { retry })),
          record
        )
        assert.strictEqual(statusOf(streamError), 429)
        assert.strictEqual(server.requests.length, 3)
        assert.deepStrictEqual(sleeps, [])
      }),
    { timeout: 5_000 }
  )

  it.effect("without Retry-After, 429 backs off exponentially with jitter", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      const { awaitSleeps, record } = yield* recordSleeps
      server.enqueue(FakeServer.rateLimited(), FakeServer.rateLimited(), Scripts.completion({ content: "ok" }, "stop"))
      const fiber = yield* Effect.forkChild(
        record(generate(server, { retry: { maxRetries: 3, baseDelay: "1 second" } }))
      )
      yield* Queue.take(server.received)
      const [first] = yield* awaitSleeps(1)
      assert.isTrue(first >= 500 && first <= 1_000, `first delay ${first}`)
      yield* TestClock.adjust(first)
      yield* Queue.take(server.received)
      const [, second] = yield* awaitSleeps(2)
      const now = yield* Clock.currentTimeMillis
      assert.isTrue(second - now >= 1_000 && second - now <= 2_000, `second delay ${second - now}`)
      yield* TestClock.adjust(second - now)
      assert.strictEqual((yield* Fiber.join(fiber)).text, "ok")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.live(
    "5xx answers are retried, and the last one surfaces when retries run out",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        server.enqueue(FakeServer.serverError(503), Scripts.completion({ content: "recovered" }, "stop"))
        assert.strictEqual((yield* generate(server)).text, "recovered")
        assert.strictEqual(server.requests.length, 2)

        server.enqueue(
          FakeServer.serverError(500),
          FakeServer.serverError(502),
          FakeServer.serverError(503),
          FakeServer.serverError(504),
          Scripts.completion({ content: "too late" }, "stop")
        )
        const error = yield* Effect.flip(generate(server, { retry: { maxRetries: 3, baseDelay: "1 millis" } }))
        assert.strictEqual(statusOf(error), 504)
        assert.strictEqual(server.requests.length, 6)
      }),
    { timeout: 5_000 }
  )

  it.live(
    "a 429 with no request quota (x-ratelimit-limit-req-minute: 0) is not retried; nor with retry: false",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        server.enqueue(FakeServer.rateLimited({ limitPerMinute: "0" }), FakeServer.serverError(503))
        assert.strictEqual(statusOf(yield* Effect.flip(generate(server))), 429)
        assert.strictEqual(statusOf(yield* Effect.flip(generate(server, { retry: false }))), 503)
        assert.strictEqual(server.requests.length, 2)
      }),
    { timeout: 5_000 }
  )

  it.live(
    "a stream is retried on 503 / 429 before any event, then streams normally",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        server.enqueue(FakeServer.serverError(503), FakeServer.rateLimited(), Scripts.mistralText(["ok"]))
        const parts = yield* collect(LanguageModel.streamText({ prompt: "Hi" })).pipe(
          Effect.provide(Layers.model(server))
        )
        assert.deepStrictEqual(summarize(parts).filter((s) => s.startsWith("text-delta")), ["text-delta:ok"])
        assert.strictEqual(server.requests.length, 3)
      }),
    { timeout: 5_000 }
  )

  it.live("a stream cut midway fails after its deltas and is never retried", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      server.enqueue(
        Scripts.sse([Scripts.chunk({ role: "assistant", content: "" }), Scripts.chunk({ content: "Hel" })], {
          ending: "cut"
        }),
        Scripts.mistralText(["should not be requested"])
      )
      const seen: Array<{ readonly type: string }> = []
      const error = yield* LanguageModel.streamText({ prompt: "Hi" }).pipe(
        Stream.runForEach((part) => Effect.sync(() => seen.push(part))),
        Effect.provide(Layers.model(server)),
        Effect.flip
      )
      assert.deepStrictEqual(summarize(seen), ["response-metadata", "text-start", "text-delta:Hel"])
      assert.strictEqual(error.reason._tag, "InvalidResponseError")
      assert.include(error.message, "The response body could not be read (the connection may have been cut)")
      assert.strictEqual(server.requests.length, 1)
    }), { timeout: 5_000 })

  it.live(
    "a stream that ends without [DONE] or a finish reason fails with an InvalidResponseError",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeServer.make()
        server.enqueue(
          Scripts.sse([Scripts.chunk({ role: "assistant", content: "" }), Scripts.chunk({ content: "Hel" })])
        )
        const error = yield* Effect.flip(collect(LanguageModel.streamText({ prompt: "Hi" }))).pipe(
          Effect.provide(Layers.model(server))
        )
        assert.strictEqual(error.reason._tag, "InvalidResponseError")
        assert.include(error.message, "The stream ended before `data: [DONE]` or a finish reason")
        assert.strictEqual(server.requests.length, 1)
      }),
    { timeout: 5_000 }
  )
})

describe("MistralClient streams", () => {
  it.effect("parses CRLF framing and comment lines, drops unknown fields such as `p`", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      const text = Scripts.sse([
        Scripts.chunk({ role: "assistant", content: "" }, { p: "a" }),
        Scripts.chunk({ content: "Hi" }, { p: "abcdefgh" }),
        Scripts.chunk({ content: "" }, { finish: "stop", usage: Scripts.USAGE }),
        "[DONE]"
      ], { lineEnding: "\r\n" })
      if (text._tag !== "Sse") return
      server.enqueue({ ...text, frames: [": keep-alive\r\n\r\n", ...text.frames] })
      const chunks = yield* MistralClient.MistralClient.pipe(
        Effect.flatMap((client) =>
          collect(client.createChatCompletionStream({ model: "m", messages: [{ role: "user", content: "x" }] }))
        ),
        Effect.provide(Layers.client(server))
      )
      assert.strictEqual(chunks.length, 3)
      assert.deepStrictEqual(chunks[1].choices?.[0].delta?.content, "Hi")
      assert.isFalse("p" in chunks[1])
    }))

  it.effect("finish_reason \"error\" mid-stream maps to an error finish; an in-stream error object fails", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      server.enqueue(
        Scripts.sse([Scripts.chunk({ content: "Par" }), Scripts.chunk({ content: "" }, { finish: "error" }), "[DONE]"]),
        Scripts.sse([
          Scripts.chunk({ content: "x" }),
          { error: { message: "CUDA out of memory", code: 500 } },
          "[DONE]"
        ])
      )
      const model = Layers.model(server, { flavour: "compat" })
      const parts = yield* collect(LanguageModel.streamText({ prompt: "Hi" })).pipe(Effect.provide(model))
      assert.strictEqual(summarize(parts).at(-1), "finish:error:undefined/undefined/undefined")
      const error = yield* Effect.flip(collect(LanguageModel.streamText({ prompt: "Hi" }))).pipe(Effect.provide(model))
      assert.strictEqual(error.reason._tag, "UnknownError")
      assert.include(error.message, "CUDA out of memory")
    }))

  it.effect("a Mistral error envelope inside the stream fails the stream with its message", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make()
      server.enqueue(
        Scripts.sse([
          Scripts.chunk({ role: "assistant", content: "" }),
          Scripts.chunk({ content: "Par" }),
          {
            object: "error",
            message: "Service unavailable: the model is overloaded",
            type: "service_unavailable",
            param: null,
            code: "1000"
          },
          "[DONE]"
        ]),
        // The legacy variant: capitalised `object`, `message` as a validation-detail object, integer `code`.
        Scripts.sse([
          {
            object: "Error",
            message: { detail: [{ type: "value_error", loc: ["body"], msg: "Bad chunk" }] },
            code: 3001
          },
          "[DONE]"
        ])
      )
      const seen: Array<{ readonly type: string }> = []
      const error = yield* LanguageModel.streamText({ prompt: "Hi" }).pipe(
        Stream.runForEach((part) => Effect.sync(() => seen.push(part))),
        Effect.provide(Layers.model(server)),
        Effect.flip
      )
      assert.deepStrictEqual(summarize(seen), ["response-metadata", "text-start", "text-delta:Par"])
      assert.strictEqual(error.reason._tag, "UnknownError")
      assert.include(error.message, "Service unavailable: the model is overloaded")
      assert.include(error.message, "type: service_unavailable")
      const legacy = yield* Effect.flip(collect(LanguageModel.streamText({ prompt: "Hi" }))).pipe(
        Effect.provide(Layers.model(server))
      )
      assert.strictEqual(legacy.reason._tag, "UnknownError")
      assert.include(legacy.message, "Bad chunk at body [value_error]")
      assert.strictEqual(server.requests.length, 2)
    }))

  it.effect("layerConfig reads MISTRAL_API_KEY, MISTRAL_BASE_URL and MISTRAL_FLAVOUR", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ apiKey: "from-env" })
      server.enqueue(Scripts.completion({ content: "configured" }, "stop"))
      const provider = ConfigProvider.fromEnv({
        env: { MISTRAL_API_KEY: "from-env", MISTRAL_BASE_URL: `${server.url}/v1/`, MISTRAL_FLAVOUR: "compat" }
      })
      const model = MistralLanguageModel.layer({ model: "local", config: { random_seed: 1 } }).pipe(
        Layer.provide(MistralClient.layerConfig()),
        Layer.provide(NodeHttpClient.layerUndici),
        Layer.provide(ConfigProvider.layer(provider))
      )
      const response = yield* LanguageModel.generateText({ prompt: "Hi" }).pipe(Effect.provide(model))
      assert.strictEqual(response.text, "configured")
      assert.strictEqual(server.requests[0].path, "/v1/chat/completions")
      assert.strictEqual(server.requests[0].body.seed, 1)
    }))
})
