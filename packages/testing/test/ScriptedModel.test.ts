import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect, Predicate, Result, Schema, Stream, Tracer } from "effect"
import { AiError, LanguageModel, Prompt, type Response, Telemetry, Tool, Toolkit } from "effect/ai"

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Stream.runCollect(stream)

const GetWeather = Tool.make("get_weather", {
  description: "Current weather for a city",
  parameters: Schema.Struct({ city: Schema.String }),
  success: Schema.Struct({ temperature: Schema.Number })
})
const Weather = Toolkit.make(GetWeather)
const WeatherHandlers = Weather.toLayer({ get_weather: ({ city }) => Effect.succeed({ temperature: city.length }) })

/** A toolkit whose handlers are never provided: tool calls must stay unresolved. */
const unresolved = <Tools extends Record<string, Tool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Toolkit.WithHandler<Tools> => ({
  tools: toolkit.tools,
  handle: (name) => Effect.die(`tool ${String(name)} must not be executed`)
})

describe("ScriptedModel", () => {
  it.effect("consumes the steps in order and records every call with its prompt", () =>
    Effect.gen(function*() {
      const first = yield* LanguageModel.generateText({ prompt: "first question" })
      const second = yield* collect(LanguageModel.streamText({ prompt: "second question" }))
      const object = yield* LanguageModel.generateObject({
        prompt: [{ role: "system", content: "Answer in JSON" }, { role: "user", content: "third question" }],
        schema: Schema.Struct({ answer: Schema.Number })
      })

      assert.strictEqual(first.text, "one")
      assert.strictEqual(first.finishReason, "stop")
      assert.strictEqual(
        second.flatMap((part) => part.type === "text-delta" ? [part.delta] : []).join(""),
        "two"
      )
      assert.deepStrictEqual(object.value, { answer: 3 })

      const calls = yield* ScriptedModel.calls
      assert.deepStrictEqual(calls.map((call) => [call.index, call.method]), [
        [0, "generateText"],
        [1, "streamText"],
        [2, "generateText"]
      ])
      assert.deepStrictEqual(calls.map(ScriptedModel.lastUserText), [
        "first question",
        "second question",
        "third question"
      ])
      assert.deepStrictEqual(calls[2].prompt.content.map((message) => message.role), ["system", "user"])
      assert.strictEqual(calls[2].responseFormat.type, "json")
      assert.strictEqual(calls[0].toolChoice, "none")
      yield* ScriptedModel.assertComplete
    }).pipe(Effect.provide(ScriptedModel.layer([
      ScriptedModel.text("one"),
      ScriptedModel.text("two"),
      ScriptedModel.text("{\"answer\":3}")
    ]))))

  it.effect("streams text as several word deltas that concatenate to the text", () =>
    Effect.gen(function*() {
      const text = "The quick brown fox,  jumps.\nDone "
      const model = yield* ScriptedModel.make([ScriptedModel.text(text)])
      const parts = yield* collect(model.languageModel.streamText({ prompt: "go" }))

      const deltas = parts.flatMap((part) => part.type === "text-delta" ? [part.delta] : [])
      assert.deepStrictEqual(deltas, ["The ", "quick ", "brown ", "fox,  ", "jumps.\n", "Done "])
      assert.strictEqual(deltas.join(""), text)
      assert.deepStrictEqual(parts.map((part) => part.type), [
        "response-metadata",
        "text-start",
        ...deltas.map(() => "text-delta"),
        "text-end",
        "finish"
      ])
      const finish = parts[parts.length - 1]
      assert(finish.type === "finish")
      assert.strictEqual(finish.reason, "stop")
      assert.strictEqual(finish.usage.outputTokens.total, 6)
      assert.strictEqual(finish.usage.inputTokens.total, 1)
      assert.strictEqual((finish.usage.inputTokens.total ?? 0) + (finish.usage.outputTokens.total ?? 0), 7)
    }))

  it.effect("emits tool calls with the given ids or deterministic call_N ids", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([
        ScriptedModel.reply({
          text: "Let me check.",
          toolCalls: [
            { name: "get_weather", params: { city: "Paris" } },
            { name: "get_weather", params: { city: "Rome" }, id: "mine" }
          ]
        }),
        ScriptedModel.toolCall("get_weather", { city: "Oslo" })
      ])
      const toolkit = unresolved(Weather)
      const streamed = yield* collect(
        model.languageModel.streamText({ prompt: "weather?", toolkit, disableToolCallResolution: true })
      )
      const generated = yield* model.languageModel.generateText({
        prompt: "again",
        toolkit,
        disableToolCallResolution: true
      })

      const streamedCalls = streamed.flatMap((part) => part.type === "tool-call" ? [[part.id, part.params]] : [])
      assert.deepStrictEqual(streamedCalls, [["call_1", { city: "Paris" }], ["mine", { city: "Rome" }]])
      assert.deepStrictEqual(streamed.map((part) => part.type).slice(-3), ["tool-call", "tool-call", "finish"])
      assert.deepStrictEqual(streamed.flatMap((part) => part.type === "text-delta" ? [part.delta] : []), [
        "Let ",
        "me ",
        "check."
      ])
      assert.strictEqual(streamed.filter((part) => part.type === "tool-result").length, 0)
      const finish = streamed[streamed.length - 1]
      assert(finish.type === "finish")
      assert.strictEqual(finish.reason, "tool-calls")

      assert.deepStrictEqual(generated.toolCalls.map((part) => [part.id, part.name, part.params]), [
        ["call_2", "get_weather", { city: "Oslo" }]
      ])
      assert.strictEqual(generated.text, "")
      assert.strictEqual(generated.finishReason, "tool-calls")
      assert.strictEqual(generated.toolResults.length, 0)
    }))

  it.effect("a function step decides from the tool result in its prompt", () =>
    Effect.gen(function*() {
      const question = Prompt.make("How warm is it in Paris?")
      // the framework resolves the tool call with the real handler (no disableToolCallResolution)
      const first = yield* collect(LanguageModel.streamText({ prompt: question, toolkit: Weather }))
      assert.deepStrictEqual(
        first.flatMap((part) => part.type === "tool-result" ? [[part.id, part.result]] : []),
        [["call_1", { temperature: 5 }]]
      )
      const history = Prompt.concat(question, Prompt.fromResponseParts(first))
      const second = yield* LanguageModel.generateText({ prompt: history, toolkit: Weather })

      assert.strictEqual(second.text, "It is 5 degrees in Paris.")
      const calls = yield* ScriptedModel.calls
      assert.deepStrictEqual(ScriptedModel.toolResults(calls[0]), [])
      assert.deepStrictEqual(ScriptedModel.toolResults(calls[1]), [
        { id: "call_1", name: "get_weather", isFailure: false, result: { temperature: 5 } }
      ])
      assert.deepStrictEqual(ScriptedModel.toolNames(calls[1]), ["get_weather"])
      assert.strictEqual(ScriptedModel.lastUserText(calls[1]), "How warm is it in Paris?")
      yield* ScriptedModel.assertComplete
    }).pipe(
      Effect.provide(ScriptedModel.layer([
        ScriptedModel.toolCall("get_weather", { city: "Paris" }),
        (call) => {
          const result = ScriptedModel.toolResults(call).find((r) => r.name === "get_weather")
          const temperature = Schema.decodeUnknownSync(Schema.Struct({ temperature: Schema.Number }))(result?.result)
          return ScriptedModel.text(`It is ${temperature.temperature} degrees in Paris.`)
        }
      ])),
      Effect.provide(WeatherHandlers)
    ))

  it.effect("a function step can fail the model call with an AiError", () =>
    Effect.gen(function*() {
      const error = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "AiError")
      assert.strictEqual(error.reason._tag, "NetworkError")
      yield* ScriptedModel.assertComplete
    }).pipe(Effect.provide(ScriptedModel.layer([
      () =>
        Effect.fail(
          AiError.make({
            module: "Test",
            method: "call",
            reason: new AiError.NetworkError({ reason: "TransportError", method: "POST", url: "http://127.0.0.1/" })
          })
        )
    ]))))

  it.effect("a call beyond the script fails with an AiError and is reported", () =>
    Effect.gen(function*() {
      const ok = yield* LanguageModel.generateText({ prompt: "hello" })
      assert.strictEqual(ok.text, "only")

      const error = yield* LanguageModel.generateText({ prompt: "one more thing" }).pipe(Effect.flip)
      assert(error.reason._tag === "UnknownError")
      assert.strictEqual(error.module, "ScriptedModel")
      assert.strictEqual(error.method, "generateText")
      assert.include(error.reason.description, "unexpected model call #2: the script has 1 step")
      assert.include(error.reason.description, "\"one more thing\"")

      const streamError = yield* collect(LanguageModel.streamText({ prompt: "and another" })).pipe(Effect.flip)
      assert(streamError.reason._tag === "UnknownError")
      assert.include(streamError.reason.description, "unexpected model call #3: the script has 1 step")

      const calls = yield* ScriptedModel.calls
      assert.deepStrictEqual(calls.map(ScriptedModel.lastUserText), ["hello", "one more thing", "and another"])
      const reported = yield* Effect.flip(ScriptedModel.assertComplete)
      assert(reported._tag === "UnexpectedModelCall")
      assert.strictEqual(reported.index, 1)
      assert.strictEqual(reported.steps, 1)
      assert.strictEqual(reported.lastUserText, "one more thing")
    }).pipe(Effect.provide(ScriptedModel.layer([ScriptedModel.text("only")]))))

  it.effect("assertComplete names the unconsumed steps, and succeeds once all are consumed", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([
        ScriptedModel.text("a"),
        ScriptedModel.text("b"),
        ScriptedModel.text("c")
      ])
      yield* model.languageModel.generateText({ prompt: "1" })
      const error = yield* Effect.flip(model.assertComplete)
      assert(error._tag === "UnconsumedModelSteps")
      assert.strictEqual(error.remaining, 2)
      assert.strictEqual(error.steps, 3)
      assert.strictEqual(error.message, "2 of 3 scripted model steps were not consumed")

      yield* model.languageModel.generateText({ prompt: "2" })
      yield* collect(model.languageModel.streamText({ prompt: "3" }))
      yield* model.assertComplete
      assert.strictEqual((yield* model.calls).length, 3)
    }))

  it.effect("fromFunction answers any number of calls", () =>
    Effect.gen(function*() {
      const answers: Array<string> = []
      for (const question of ["a", "b", "c", "d", "e"]) {
        const response = yield* LanguageModel.generateText({ prompt: question })
        answers.push(response.text)
      }
      assert.deepStrictEqual(answers, ["echo #0: a", "echo #1: b", "echo #2: c", "echo #3: d", "echo #4: e"])
      yield* ScriptedModel.assertComplete
      assert.strictEqual((yield* ScriptedModel.calls).length, 5)
    }).pipe(Effect.provide(ScriptedModel.layerFunction((call) =>
      Effect.succeed(ScriptedModel.text(`echo #${call.index}: ${ScriptedModel.lastUserText(call)}`))
    ))))

  it.effect("fromFunction({ record: false }) keeps no call: the brain still sees each call's index", () =>
    Effect.gen(function*() {
      const answers: Array<string> = []
      for (const question of ["a", "b", "c"]) {
        const response = yield* LanguageModel.generateText({ prompt: question })
        answers.push(response.text)
      }
      assert.deepStrictEqual(answers, ["echo #0: a", "echo #1: b", "echo #2: c"])
      assert.deepStrictEqual(yield* ScriptedModel.calls, [])
      yield* ScriptedModel.assertComplete
    }).pipe(Effect.provide(ScriptedModel.layerFunction(
      (call) => ScriptedModel.text(`echo #${call.index}: ${ScriptedModel.lastUserText(call)}`),
      { record: false }
    ))))

  describe("tools described only by JSON Schema", () => {
    // What the runtime receives from a serialisable AgentSpec: names, descriptions and raw JSON Schema.
    const specs: ReadonlyArray<{
      readonly name: string
      readonly description: string
      readonly parameters: Record<string, unknown>
    }> = [
      {
        name: "get_weather",
        description: "Current weather for a city",
        parameters: {
          type: "object",
          properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
          required: ["city"],
          additionalProperties: false
        }
      },
      {
        name: "send_email",
        description: "Send an email",
        parameters: {
          type: "object",
          properties: { to: { type: "string" }, body: { type: "string" } },
          required: ["to", "body"]
        }
      }
    ]

    const jsonSchemaTool = (spec: {
      readonly name: string
      readonly description: string
      readonly parameters: Record<string, unknown>
    }) => Tool.dynamic(spec.name, { description: spec.description, parameters: spec.parameters })

    it.effect("Tool.getJsonSchema returns the raw schema unchanged", () =>
      Effect.sync(() => {
        for (const spec of specs) {
          const tool = jsonSchemaTool(spec)
          assert.deepStrictEqual<unknown>(Tool.getJsonSchema(tool), spec.parameters)
          assert.strictEqual(Tool.getDescription(tool), spec.description)
        }
      }))

    it.effect("a raw schema without a top-level type is kept as given", () =>
      Effect.sync(() => {
        const tool = jsonSchemaTool({
          name: "loose",
          description: "no top-level type",
          parameters: { properties: { x: { type: "string" } } }
        })
        assert.deepStrictEqual<unknown>(Tool.getJsonSchema(tool), { properties: { x: { type: "string" } } })
      }))

    it.effect("streamText surfaces unexecuted tool calls and the model sees the raw JSON Schema", () =>
      Effect.gen(function*() {
        const toolkit = unresolved(Toolkit.make(...specs.map(jsonSchemaTool)))
        const model = yield* ScriptedModel.make([
          ScriptedModel.toolCall("get_weather", { city: "Paris", unit: "celsius" }),
          ScriptedModel.toolCall("send_email", { to: "a@example.com", body: "hi" }, "call_email")
        ])

        const parts = yield* collect(model.languageModel.streamText({
          prompt: "weather?",
          toolkit,
          disableToolCallResolution: true
        }))
        const toolCalls = parts.flatMap((part) => part.type === "tool-call" ? [part] : [])
        assert.deepStrictEqual(toolCalls.map((part) => [part.id, part.name, part.params]), [
          ["call_1", "get_weather", { city: "Paris", unit: "celsius" }]
        ])
        assert.strictEqual(parts.filter((part) => part.type === "tool-result").length, 0)

        const generated = yield* model.languageModel.generateText({
          prompt: "email?",
          toolkit,
          toolChoice: { oneOf: ["send_email"] },
          disableToolCallResolution: true
        })
        assert.deepStrictEqual(generated.toolCalls.map((part) => [part.id, part.name, part.params]), [
          ["call_email", "send_email", { to: "a@example.com", body: "hi" }]
        ])
        assert.strictEqual(generated.toolResults.length, 0)

        const calls = yield* model.calls
        assert.deepStrictEqual<unknown>(calls[0].tools, specs)
        assert.strictEqual(calls[0].toolChoice, "auto")
        assert.deepStrictEqual(ScriptedModel.toolNames(calls[1]), ["send_email"])
        assert.deepStrictEqual(calls[1].toolChoice, { oneOf: ["send_email"] })
        yield* model.assertComplete
      }))

    it.effect("a tool call the toolkit does not know fails the model call with InvalidOutputError", () =>
      Effect.gen(function*() {
        const toolkit = unresolved(Toolkit.make(...specs.map(jsonSchemaTool)))
        const model = yield* ScriptedModel.make([ScriptedModel.toolCall("delete_everything", {})])
        const error = yield* collect(model.languageModel.streamText({
          prompt: "go",
          toolkit,
          disableToolCallResolution: true
        })).pipe(Effect.flip)
        assert.strictEqual(error._tag, "AiError")
        assert.strictEqual(error.reason._tag, "InvalidOutputError")
      }))
  })
})

describe("ScriptedModel answers like LanguageModel.make", () => {
  // Every request goes through `LanguageModel.make`; with a span transformer in context, `LanguageModel.make` also
  // collects the response for it. The same script with and without one must give the same parts, the same errors
  // and the same recorded calls.
  // Returns how many responses the transformer saw, to show they went through `LanguageModel.make`.
  const throughMake = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      let transformed = 0
      return effect.pipe(
        Effect.provideService(Telemetry.CurrentSpanTransformer, () => {
          transformed++
        }),
        Effect.map((result) => [result, transformed] as const)
      )
    })

  /** A part, or a failure reduced to what a caller sees of it. */
  const outcome = (result: Result.Result<unknown, AiError.AiError>) =>
    Result.match(result, {
      onSuccess: (part) => part,
      onFailure: (error) => ({
        _tag: error.reason._tag,
        module: error.module,
        method: error.method,
        message: error.message
      })
    })

  /** How a case calls the model: no toolkit, the weather toolkit (its calls unresolved), or an empty toolkit. */
  interface Case {
    readonly name: string
    readonly reply: ScriptedModel.Reply
    readonly toolkit: "none" | "weather" | "empty"
    readonly toolChoice?: LanguageModel.ToolChoice<"get_weather"> | undefined
    readonly fails: boolean
  }

  const streamed = (
    model: LanguageModel.LanguageModel,
    kase: Case,
    prompt: string
  ): Stream.Stream<unknown, AiError.AiError> => {
    switch (kase.toolkit) {
      case "none":
        return model.streamText({ prompt })
      case "weather":
        return model.streamText({
          prompt,
          toolkit: unresolved(Weather),
          toolChoice: kase.toolChoice,
          disableToolCallResolution: true
        })
      case "empty":
        return model.streamText({ prompt, toolkit: unresolved(Toolkit.empty), disableToolCallResolution: true })
    }
  }

  const generated = (
    model: LanguageModel.LanguageModel,
    kase: Case,
    prompt: string
  ): Effect.Effect<unknown, AiError.AiError> => {
    switch (kase.toolkit) {
      case "none":
        return Effect.map(model.generateText({ prompt }), (response) => response.content)
      case "weather":
        return Effect.map(
          model.generateText({
            prompt,
            toolkit: unresolved(Weather),
            toolChoice: kase.toolChoice,
            disableToolCallResolution: true
          }),
          (response) => response.content
        )
      case "empty":
        return Effect.map(
          model.generateText({ prompt, toolkit: unresolved(Toolkit.empty), disableToolCallResolution: true }),
          (response) => response.content
        )
    }
  }

  const cases: ReadonlyArray<Case> = [
    { name: "text, no toolkit", reply: ScriptedModel.text("Sunny and 21 degrees."), toolkit: "none", fails: false },
    {
      name: "text and tool calls, unresolved toolkit",
      reply: ScriptedModel.reply({
        text: "Let me check.",
        toolCalls: [{ name: "get_weather", params: { city: "Paris" } }, {
          name: "get_weather",
          params: { city: "Rome" },
          id: "mine"
        }]
      }),
      toolkit: "weather",
      fails: false
    },
    {
      name: "a tool call restricted by toolChoice",
      reply: ScriptedModel.toolCall("get_weather", { city: "Oslo" }),
      toolkit: "weather",
      toolChoice: { oneOf: ["get_weather"] },
      fails: false
    },
    {
      name: "a tool the toolkit does not know",
      reply: ScriptedModel.reply({ text: "Deleting.", toolCalls: [{ name: "delete_everything", params: {} }] }),
      toolkit: "weather",
      fails: true
    },
    {
      name: "parameters the tool's schema rejects",
      reply: ScriptedModel.toolCall("get_weather", { city: 42 }),
      toolkit: "weather",
      fails: true
    },
    {
      name: "a tool call without a toolkit",
      reply: ScriptedModel.toolCall("get_weather", { city: "Paris" }),
      toolkit: "none",
      fails: true
    },
    {
      name: "a tool call with an empty toolkit",
      reply: ScriptedModel.toolCall("get_weather", { city: "Paris" }),
      toolkit: "empty",
      fails: true
    }
  ]

  for (const kase of cases) {
    it.effect(`streamText and generateText: ${kase.name}`, () =>
      Effect.gen(function*() {
        const run = Effect.gen(function*() {
          const model = yield* ScriptedModel.make([kase.reply, kase.reply])
          const stream = yield* collect(streamed(model.languageModel, kase, "What is the weather?").pipe(Stream.result))
          const whole = yield* Effect.result(generated(model.languageModel, kase, "And now?"))
          return { stream: stream.map(outcome), whole: outcome(whole), calls: yield* model.calls }
        })
        const direct = yield* run
        const [made, transformed] = yield* throughMake(run)
        assert.isAtLeast(transformed, 1)
        assert.deepStrictEqual(direct, made)
        const last = direct.stream[direct.stream.length - 1]
        assert.strictEqual(Predicate.hasProperty(last, "_tag") && last._tag === "InvalidOutputError", kase.fails)
        assert.strictEqual(Predicate.hasProperty(direct.whole, "_tag"), kase.fails)
      }))
  }

  it.effect("a decoding failure is LanguageModel.make's InvalidOutputError, after the parts before it", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.make([ScriptedModel.toolCall("delete_everything", {})])
      const parts: ReadonlyArray<Response.StreamPartEncoded> = [
        { type: "response-metadata", id: "resp_1", modelId: "scripted-model" },
        { type: "tool-call", id: "call_1", name: "delete_everything", params: {} },
        { type: "finish", reason: "tool-calls", usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } } }
      ]
      const reference = yield* LanguageModel.make({
        generateText: () => Effect.die(new Error("not used")),
        // the parts ScriptedModel streams, one per chunk, as a provider streams them
        streamText: () => Stream.fromArrays(...parts.map((part) => [part]))
      })
      const options = { prompt: "go", toolkit: unresolved(Weather), disableToolCallResolution: true } as const
      const scripted = yield* collect(model.languageModel.streamText(options).pipe(Stream.result))
      const expected = yield* collect(reference.streamText(options).pipe(Stream.result))
      assert.deepStrictEqual(scripted.map(outcome), expected.map(outcome))
      assert.deepStrictEqual(
        scripted.map((result) => Result.isSuccess(result) ? result.success.type : result.failure.reason._tag),
        ["response-metadata", "InvalidOutputError"]
      )
    }))

  it.effect("each toolkit decodes with its own tools, also beyond the toolkits whose decoders are kept", () =>
    Effect.gen(function*() {
      // 20 toolkits of one tool each, `tool_0` … `tool_19`: more than the decoders kept, used twice in turn
      const toolkits = Array.from(
        { length: 20 },
        (_, i) => unresolved(Toolkit.make(Tool.make(`tool_${i}`, { parameters: Schema.Struct({ n: Schema.Number }) })))
      )
      const model = yield* ScriptedModel.fromFunction((call) =>
        ScriptedModel.toolCall(ScriptedModel.lastUserText(call) ?? "", { n: call.index })
      )
      for (const round of [0, 1]) {
        for (const [i, toolkit] of toolkits.entries()) {
          const own = yield* collect(
            model.languageModel.streamText({ prompt: `tool_${i}`, toolkit, disableToolCallResolution: true })
          )
          assert.deepStrictEqual(own.flatMap((part) => part.type === "tool-call" ? [part.name] : []), [`tool_${i}`])
          const other = yield* model.languageModel.generateText({
            prompt: `tool_${(i + 1 + round) % 20}`,
            toolkit,
            disableToolCallResolution: true
          }).pipe(Effect.flip)
          assert.strictEqual(other.reason._tag, "InvalidOutputError")
        }
      }
    }))

  it.effect("streamText and generateText open LanguageModel.make's spans", () =>
    Effect.gen(function*() {
      const spans: Array<string> = []
      const base = yield* Effect.tracer
      const tracer = Tracer.make({
        span: (options) => {
          spans.push(options.name)
          return base.span(options)
        },
        context: base.context
      })
      const model = yield* ScriptedModel.make([ScriptedModel.text("a"), ScriptedModel.text("b")])
      yield* collect(model.languageModel.streamText({ prompt: "1" })).pipe(Effect.withTracer(tracer))
      yield* model.languageModel.generateText({ prompt: "2" }).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(spans, ["LanguageModel.streamText", "LanguageModel.generateText"])
    }))
})

describe("ScriptedModel recording", () => {
  it.effect("recorded calls are a snapshot, and a tool's description is built once per tool", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("ok"))
      const request = { prompt: "hi", toolkit: unresolved(Weather), disableToolCallResolution: true } as const
      yield* collect(model.languageModel.streamText(request))
      const first = yield* model.calls
      // another toolkit holding the same tool object
      yield* model.languageModel.generateText({ ...request, toolkit: unresolved(Toolkit.make(GetWeather)) })
      const both = yield* model.calls
      assert.strictEqual(first.length, 1)
      assert.strictEqual(both.length, 2)
      assert.strictEqual(both[0], first[0])
      assert.strictEqual(both[1].tools[0], both[0].tools[0])
      assert.deepStrictEqual<unknown>(both[0].tools, [{
        name: "get_weather",
        description: "Current weather for a city",
        parameters: Tool.getJsonSchema(GetWeather)
      }])
    }))
})
