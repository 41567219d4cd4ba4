/**
 * A session recorded with other providers, replayed to Mistral: the request must pass every documented check
 * (reference/mistral-wire.md §1.1, §1.3). The fake server runs in validating mode, so a broken rule would be a
 * 400/422 there; each rule is also asserted on the recorded request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type AiError, LanguageModel, Prompt } from "effect/ai"
import * as MistralClient from "../src/MistralClient.js"
import * as FakeServer from "./fixtures/FakeServer.js"
import * as Layers from "./fixtures/Layers.js"
import * as MistralRules from "./fixtures/MistralRules.js"
import * as Scripts from "./fixtures/Scripts.js"

const OPENAI_ID = "call_8f3a9b2c1d4e5f6a7b8c9d0e"
const ANTHROPIC_ID = "toolu_01A09q90qw90lq917835lq9"
const OLLAMA_ID = "call_k3j2h1g0"
const MISTRAL_ID = "D681PevKs"

const result = (id: string, name: string, isFailure: boolean, value: unknown) =>
  ({ type: "tool-result", id, name, isFailure, result: value, providerExecuted: false }) as const

/** What a Parley session hands to the model on the turn after tool calls were settled. */
const session = Prompt.make([
  { role: "system", content: "You are Parley's assistant. Use tools when needed." },
  { role: "user", content: [{ type: "text", text: "Book room A for Monday and tell me the weather." }] },
  {
    role: "assistant",
    content: [
      { type: "reasoning", text: "Need the calendar, a booking and the weather." },
      { type: "text", text: "Let me check a few things." },
      { type: "tool-call", id: OPENAI_ID, name: "calendar_lookup", params: { day: "monday" } },
      { type: "tool-call", id: ANTHROPIC_ID, name: "book_room", params: { room: "A", day: "monday" } },
      { type: "tool-call", id: OLLAMA_ID, name: "browser_geolocate", params: {} },
      { type: "tool-call", id: MISTRAL_ID, name: "get_weather", params: { city: "Paris" } }
    ]
  },
  {
    role: "tool",
    content: [
      // Out of call order, as results settle in any order.
      result(MISTRAL_ID, "get_weather", false, "Sunny, 21°C"),
      result(OPENAI_ID, "calendar_lookup", false, { free: true }),
      // An approval the user denied.
      result(ANTHROPIC_ID, "book_room", true, { _tag: "ApprovalDenied", reason: "The user denied this action" }),
      // A client-side tool that failed in the browser.
      result(OLLAMA_ID, "browser_geolocate", true, { _tag: "ClientToolError", message: "Permission denied" })
    ]
  },
  { role: "user", content: [{ type: "text", text: "Thanks. Which day is free, then?" }] }
])

const ID = /^[a-zA-Z0-9]{9}$/

const statusOf = (error: AiError.AiError) => "http" in error.reason ? error.reason.http?.response?.status ?? 0 : 0

const bodyOf = (error: AiError.AiError) => "http" in error.reason ? error.reason.http?.body ?? "" : ""
const NAME = /^[a-zA-Z0-9_-]{1,64}$/

describe("MistralLanguageModel replayed session", () => {
  it.effect("produces a request that satisfies every Mistral rule", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.completion({ content: "Monday is free." }, "stop"))
      server.enqueue(Scripts.completion({ content: "Monday is free." }, "stop"))
      const model = Layers.model(server, { model: "mistral-large-latest" })
      const response = yield* LanguageModel.generateText({ prompt: session }).pipe(Effect.provide(model))
      assert.strictEqual(response.text, "Monday is free.") // the validating server answered 200
      const body = server.requests[0].body
      const messages = body.messages

      // Closed schema and every structural rule, as the fake server checks them.
      assert.deepStrictEqual(MistralRules.validate(body), [])

      const calls = messages[3].tool_calls ?? []
      const ids = calls.map((call) => call.id)
      const [calendarId, bookId, geoId, weatherId] = ids
      assert.deepStrictEqual(messages, [
        { role: "system", content: "You are Parley's assistant. Use tools when needed." },
        { role: "user", content: "Book room A for Monday and tell me the weather." },
        { role: "assistant", content: "Let me check a few things." },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            {
              id: calendarId,
              type: "function",
              function: { name: "calendar_lookup", arguments: "{\"day\":\"monday\"}" }
            },
            {
              id: bookId,
              type: "function",
              function: { name: "book_room", arguments: "{\"room\":\"A\",\"day\":\"monday\"}" }
            },
            { id: geoId, type: "function", function: { name: "browser_geolocate", arguments: "{}" } },
            { id: weatherId, type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }
          ]
        },
        { role: "tool", name: "calendar_lookup", tool_call_id: calendarId, content: "{\"free\":true}" },
        {
          role: "tool",
          name: "book_room",
          tool_call_id: bookId,
          content: "{\"error\":{\"_tag\":\"ApprovalDenied\",\"reason\":\"The user denied this action\"}}"
        },
        {
          role: "tool",
          name: "browser_geolocate",
          tool_call_id: geoId,
          content: "{\"error\":{\"_tag\":\"ClientToolError\",\"message\":\"Permission denied\"}}"
        },
        { role: "tool", name: "get_weather", tool_call_id: weatherId, content: "Sunny, 21°C" },
        // A user message may follow tool results (mistral-common >= 1.11): no bridging assistant message.
        { role: "user", content: "Thanks. Which day is free, then?" }
      ])

      // Rule 1: ids are 9 alphanumerics; foreign ids are remapped, Mistral's own id is kept.
      const toolMessageIds = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id ?? "")
      for (const id of [...ids, ...toolMessageIds]) assert.match(id, ID)
      assert.strictEqual(weatherId, MISTRAL_ID)
      for (const original of [OPENAI_ID, ANTHROPIC_ID, OLLAMA_ID]) assert.notInclude(ids, original)
      // …consistently between the assistant's tool_calls and the tool messages, and deterministically.
      assert.deepStrictEqual(toolMessageIds, ids)
      assert.strictEqual(new Set(ids).size, ids.length)
      yield* LanguageModel.generateText({ prompt: session }).pipe(Effect.provide(model))
      assert.deepStrictEqual(server.requests[1].body, body)

      // Rule 2: function names.
      for (const call of calls) assert.match(call.function.name, NAME)

      // Rule 3: role order; in particular never `system` after `assistant` / `tool`.
      for (let i = 1; i < messages.length; i++) {
        const previous = messages[i - 1].role
        assert.isTrue(
          MistralRules.NEXT_ROLES[previous].has(messages[i].role),
          `${messages[i].role} after ${previous}`
        )
      }

      // Rule 4: exactly one tool message per call, right after the assistant message, in call order.
      const following = messages.slice(4, 4 + calls.length)
      assert.deepStrictEqual(following.map((m) => m.role), calls.map(() => "tool"))
      assert.strictEqual(messages[4 + calls.length].role, "user")

      // Rule 5: the last message is `user` (or `tool`, or a prefix assistant).
      assert.strictEqual(messages[messages.length - 1].role, "user")

      // Rule 6: the assistant message carrying tool_calls has empty content; its text went just before it.
      assert.strictEqual(messages[3].content, "")
      assert.strictEqual(messages[2].content, "Let me check a few things.")

      // Reasoning from another provider is not replayed (no `reasoning_content`, no thinking chunk).
      assert.notInclude(server.requests[0].raw, "Need the calendar")
    }))

  it.effect("repairs histories that would break a rule: missing, orphaned, misplaced and duplicate results", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(
        Scripts.completion({ content: "ok" }, "stop"),
        Scripts.completion({ content: "ok" }, "stop"),
        Scripts.completion({ content: "ok" }, "stop")
      )
      const model = Layers.model(server)
      const broken = Prompt.make([
        { role: "user", content: [{ type: "text", text: "go" }] },
        {
          role: "assistant",
          content: [
            { type: "tool-call", id: "chatcmpl-tool-1", name: "mcp.files/read", params: { path: "/a" } },
            { type: "tool-call", id: "functions.search:1", name: "search", params: { q: "x" } }
          ]
        },
        // The result of the first call arrives late, after an unrelated user message; a duplicate and an
        // orphan are present; the second call never got a result.
        { role: "user", content: [{ type: "text", text: "still there?" }] },
        {
          role: "tool",
          content: [
            result("chatcmpl-tool-1", "mcp.files/read", false, "file body"),
            result("chatcmpl-tool-1", "mcp.files/read", false, "duplicate"),
            result("orphan-id", "search", false, "no call")
          ]
        }
      ])
      yield* LanguageModel.generateText({ prompt: broken }).pipe(Effect.provide(model))
      const messages = server.requests[0].body.messages
      assert.deepStrictEqual(MistralRules.validate(server.requests[0].body), [])
      assert.deepStrictEqual(messages.map((m) => m.role), ["user", "assistant", "tool", "tool", "user"])
      const calls = messages[1].tool_calls ?? []
      assert.strictEqual(calls[0].function.name, "mcp_files_read")
      assert.deepStrictEqual(messages[2], {
        role: "tool",
        name: "mcp_files_read",
        tool_call_id: calls[0].id,
        content: "file body"
      })
      assert.strictEqual(messages[3].tool_call_id, calls[1].id)
      assert.include(String(messages[3].content), "No result was recorded")
      assert.notInclude(server.requests[0].raw, "orphan")
      assert.notInclude(server.requests[0].raw, "duplicate")

      // Ending on tool results: no bridge, last role `tool`.
      const endsWithTool = Prompt.make([
        { role: "user", content: [{ type: "text", text: "weather?" }] },
        { role: "assistant", content: [{ type: "tool-call", id: "call_1", name: "get_weather", params: {} }] },
        { role: "tool", content: [result("call_1", "get_weather", false, "Sunny")] }
      ])
      yield* LanguageModel.generateText({ prompt: endsWithTool }).pipe(Effect.provide(model))
      assert.deepStrictEqual(server.requests[1].body.messages.map((m) => m.role), ["user", "assistant", "tool"])

      // Ending on an assistant message: sent as a prefix to continue.
      const endsWithAssistant = Prompt.make([
        { role: "user", content: [{ type: "text", text: "Write a poem" }] },
        { role: "assistant", content: [{ type: "text", text: "Roses are" }] }
      ])
      yield* LanguageModel.generateText({ prompt: endsWithAssistant }).pipe(Effect.provide(model))
      assert.deepStrictEqual(server.requests[2].body.messages.at(-1), {
        role: "assistant",
        content: "Roses are",
        prefix: true
      })
    }))

  it.effect("pairs each result with the nearest earlier unanswered call when servers reuse tool-call ids", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.completion({ content: "ok" }, "stop"))
      // Kimi (vLLM) mints `functions.<name>:<idx>` afresh every round, llama.cpp can send one constant id:
      // the same id comes back in every round and even twice in one answer.
      const KIMI = "functions.search:0"
      const CONSTANT = "call_0"
      const reused = Prompt.make([
        { role: "user", content: [{ type: "text", text: "Search a, then b, then c and d." }] },
        { role: "assistant", content: [{ type: "tool-call", id: KIMI, name: "search", params: { q: "a" } }] },
        { role: "tool", content: [result(KIMI, "search", false, "found a")] },
        { role: "assistant", content: [{ type: "tool-call", id: KIMI, name: "search", params: { q: "b" } }] },
        { role: "tool", content: [result(KIMI, "search", false, "found b")] },
        {
          role: "assistant",
          content: [
            { type: "tool-call", id: CONSTANT, name: "search", params: { q: "c" } },
            { type: "tool-call", id: CONSTANT, name: "search", params: { q: "d" } }
          ]
        },
        {
          role: "tool",
          content: [result(CONSTANT, "search", false, "found c"), result(CONSTANT, "search", false, "found d")]
        }
      ])
      yield* LanguageModel.generateText({ prompt: reused }).pipe(Effect.provide(Layers.model(server)))
      const body = server.requests[0].body
      assert.deepStrictEqual(MistralRules.validate(body), [])
      const pairs = body.messages.flatMap((message, i) =>
        (message.tool_calls ?? []).map((call, j) => {
          const answer = body.messages[i + 1 + j]
          assert.strictEqual(answer.tool_call_id, call.id)
          return [call.function.arguments, answer.content]
        })
      )
      assert.deepStrictEqual(pairs, [
        ["{\"q\":\"a\"}", "found a"],
        ["{\"q\":\"b\"}", "found b"],
        ["{\"q\":\"c\"}", "found c"],
        ["{\"q\":\"d\"}", "found d"]
      ])
      const ids = body.messages.flatMap((message) => (message.tool_calls ?? []).map((call) => call.id))
      for (const id of ids) assert.match(id, ID)
      assert.strictEqual(new Set(ids).size, 4)
      assert.notInclude(server.requests[0].raw, "No result was recorded")
    }))

  it.effect("the validating fake server rejects what Mistral rejects (so the checks above are meaningful)", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      const naive = {
        model: "mistral-large-latest",
        messages: [
          { role: "assistant", content: "Hello! How can I help?" },
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: "calling",
            tool_calls: [{ id: OPENAI_ID, type: "function", function: { name: "a.b", arguments: "{}" } }]
          },
          { role: "tool", tool_call_id: OPENAI_ID, content: "done" },
          { role: "user", content: "next" },
          { role: "assistant", content: "unfinished" }
        ]
      } as const
      const send = (body: MistralClient.ChatCompletionRequest) =>
        MistralClient.MistralClient.pipe(
          Effect.flatMap((client) => client.createChatCompletion(body)),
          Effect.flip,
          Effect.provide(Layers.client(server, { retry: false }))
        )
      const extra = yield* send({ ...naive, stream_options: { include_usage: true } })
      assert.strictEqual(statusOf(extra), 422)
      const invalid = yield* send(naive)
      assert.strictEqual(statusOf(invalid), 400)
      const invalidBody = bodyOf(invalid)
      // The message-count rules come first, as in mistral-common: six messages, so the last role is checked (and
      // the leading assistant message is not refused: the first role is checked only for a lone message).
      assert.include(invalidBody, "Expected last role User or Tool (or Assistant with prefix True) for serving but got")
      const badId = yield* send({
        model: "mistral-large-latest",
        messages: [
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: "",
            tool_calls: [{ id: OPENAI_ID, type: "function", function: { name: "get_weather", arguments: "{}" } }]
          },
          { role: "tool", name: "get_weather", tool_call_id: OPENAI_ID, content: "done" }
        ]
      })
      assert.include(bodyOf(badId), "\"code\":\"3280\"")
      assert.deepStrictEqual(
        [...new Set(MistralRules.validate(naive).map((violation) => violation.rule))].sort(),
        ["assistant-content", "last-role", "name", "tool-call-id"]
      )
      assert.deepStrictEqual(server.requests.length, 3)
    }))

  it.effect("a history that starts with an assistant message gets an empty user message first", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.completion({ content: "Paris." }, "stop"))
      const greeting = Prompt.make([
        { role: "assistant", content: [{ type: "text", text: "Hello! Ask me anything." }] },
        { role: "user", content: [{ type: "text", text: "Capital of France?" }] }
      ])
      const response = yield* LanguageModel.generateText({ prompt: greeting }).pipe(
        Effect.provide(Layers.model(server))
      )
      assert.strictEqual(response.text, "Paris.")
      assert.deepStrictEqual(server.requests[0].body.messages, [
        { role: "user", content: "" },
        { role: "assistant", content: "Hello! Ask me anything." },
        { role: "user", content: "Capital of France?" }
      ])
    }))

  it.effect("the fake server follows current mistral-common and the spec's enums and ranges", () =>
    Effect.gen(function*() {
      const toolTurn = [
        { role: "user", content: "weather?" },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ id: MISTRAL_ID, type: "function", function: { name: "get_weather", arguments: "{}" } }]
        },
        { role: "tool", name: "get_weather", tool_call_id: MISTRAL_ID, content: "Sunny" }
      ]
      // A user message right after tool results is accepted (mistral-common 1.11, April 2026).
      assert.deepStrictEqual(
        MistralRules.validate({ model: "m", messages: [...toolTurn, { role: "user", content: "thanks" }] }),
        []
      )
      // The first role is checked only for a lone message: a longer conversation may start with an assistant.
      assert.deepStrictEqual(
        MistralRules.validate({
          model: "m",
          messages: [{ role: "assistant", content: "Hi" }, { role: "user", content: "x" }]
        }),
        []
      )
      assert.deepStrictEqual(
        MistralRules.validate({
          model: "m",
          messages: [{ role: "system", content: "s" }, { role: "assistant", content: "Hi" }, {
            role: "user",
            content: "x"
          }]
        }),
        []
      )

      const server = yield* FakeServer.make({ validate: true })
      const base = { model: "mistral-small-latest", messages: [{ role: "user", content: "hi" }] } as const
      const send = (body: MistralClient.ChatCompletionRequest) =>
        MistralClient.MistralClient.pipe(
          Effect.flatMap((client) => client.createChatCompletion(body)),
          Effect.result,
          Effect.provide(Layers.client(server, { retry: false }))
        )
      const rejected = (body: MistralClient.ChatCompletionRequest) =>
        Effect.map(send(body), (result) => {
          if (result._tag === "Success" || statusOf(result.failure) === 0) return assert.fail("not rejected")
          return { status: statusOf(result.failure), body: JSON.parse(bodyOf(result.failure) || "{}") }
        })
      const details = (reply: { readonly body: { readonly message?: { readonly detail?: unknown } } }) =>
        reply.body.message?.detail

      const effort = yield* rejected({ ...base, reasoning_effort: "medium" })
      assert.strictEqual(effort.status, 422)
      assert.deepStrictEqual(details(effort), [{
        type: "enum",
        loc: ["body", "reasoning_effort"],
        msg: "Input should be 'high' or 'none'",
        input: "medium"
      }])
      const choice = yield* rejected({ ...base, tool_choice: "sometimes" as "auto" })
      assert.strictEqual(choice.status, 422)
      assert.include(JSON.stringify(details(choice)), "Input should be 'auto', 'none', 'any' or 'required'")
      const hot = yield* rejected({ ...base, temperature: 1.6 })
      assert.strictEqual(hot.status, 422)
      assert.include(JSON.stringify(details(hot)), "less_than_equal")
      const cold = yield* rejected({ ...base, temperature: -0.1, top_p: 1.2, random_seed: 1.5 })
      assert.deepStrictEqual(
        (details(cold) as ReadonlyArray<{ readonly type: string; readonly loc: ReadonlyArray<string> }>).map((d) =>
          `${d.loc.join(".")}:${d.type}`
        ),
        ["body.temperature:greater_than_equal", "body.top_p:less_than_equal", "body.random_seed:int_type"]
      )
      // The spec's upper bound for temperature is 1.5, and every documented enum value passes.
      server.enqueue(Scripts.completion({ content: "ok" }, "stop"))
      const accepted = yield* send({ ...base, temperature: 1.5, reasoning_effort: "high", tool_choice: "required" })
      assert.strictEqual(accepted._tag, "Success")
    }))

  it.effect("the fake server checks the first role only for one message and the last role only for more", () =>
    Effect.gen(function*() {
      const rules = (...roles: ReadonlyArray<string>) =>
        MistralRules.validate({ model: "m", messages: roles.map((role) => ({ role, content: "x" })) })
          .map((violation) => `${violation.rule}: ${violation.message}`)
      // No message at all.
      assert.deepStrictEqual(rules(), ["first-role: Conversation must have at least one message"])
      // One message: its role must be user or system; the last-role rule does not apply (a lone system is fine).
      assert.deepStrictEqual(rules("user"), [])
      assert.deepStrictEqual(rules("system"), [])
      assert.deepStrictEqual(rules("assistant"), [
        "first-role: Conversation must start with a user message or system message"
      ])
      // Two or more: the first role is not checked, the last one is.
      assert.deepStrictEqual(rules("system", "user"), [])
      assert.deepStrictEqual(rules("assistant", "user"), [])
      assert.deepStrictEqual(rules("user", "system"), [
        "last-role: Expected last role User or Tool (or Assistant with prefix True) for serving but got system"
      ])
      assert.deepStrictEqual(rules("system", "user", "assistant"), [
        "last-role: Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant"
      ])
      assert.deepStrictEqual(
        MistralRules.validate({
          model: "m",
          messages: [{ role: "user", content: "x" }, { role: "assistant", content: "y", prefix: true }]
        }),
        []
      )

      // Over HTTP: a request whose only message is a system message is answered, as Mistral answers it.
      const server = yield* FakeServer.make({ validate: true })
      server.enqueue(Scripts.completion({ content: "ok" }, "stop"))
      const send = (messages: MistralClient.ChatCompletionRequest["messages"]) =>
        MistralClient.MistralClient.pipe(
          Effect.flatMap((client) => client.createChatCompletion({ model: "mistral-small-latest", messages })),
          Effect.result,
          Effect.provide(Layers.client(server, { retry: false }))
        )
      const lone = yield* send([{ role: "system", content: "Say ok." }])
      assert.strictEqual(lone._tag, "Success")
      const trailing = yield* send([{ role: "user", content: "hi" }, { role: "system", content: "Say ok." }])
      assert.strictEqual(trailing._tag === "Failure" ? statusOf(trailing.failure) : 0, 400)
    }))

  it.effect("replays reasoning a Mistral model produced as thinking chunks, where the model's tokenizer takes them", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      const compat = yield* FakeServer.make()
      const mistralThinking = { mistral: { type: "thinking" } } as const
      const history = Prompt.make([
        { role: "user", content: [{ type: "text", text: "How many r in strawberry?" }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Count them: s-t-r-a-w-b-e-r-r-y.", options: mistralThinking },
            { type: "text", text: "There are 3." }
          ]
        },
        { role: "user", content: [{ type: "text", text: "Check the weather in Paris." }] },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Another provider's reasoning." },
            { type: "reasoning", text: "Call the weather tool.", options: mistralThinking },
            { type: "tool-call", id: MISTRAL_ID, name: "get_weather", params: { city: "Paris" } }
          ]
        },
        { role: "tool", content: [result(MISTRAL_ID, "get_weather", false, "Sunny")] }
      ])
      const thinking = (text: string) => ({ type: "thinking", thinking: [{ type: "text", text }] })
      const replayed = [
        { role: "user", content: "How many r in strawberry?" },
        {
          role: "assistant",
          content: [thinking("Count them: s-t-r-a-w-b-e-r-r-y."), { type: "text", text: "There are 3." }]
        },
        { role: "user", content: "Check the weather in Paris." },
        { role: "assistant", content: [thinking("Call the weather tool.")] },
        {
          role: "assistant",
          content: "",
          tool_calls: [{
            id: MISTRAL_ID,
            type: "function",
            function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
          }]
        },
        { role: "tool", name: "get_weather", tool_call_id: MISTRAL_ID, content: "Sunny" }
      ]
      const flattened = [
        { role: "user", content: "How many r in strawberry?" },
        { role: "assistant", content: "There are 3." },
        { role: "user", content: "Check the weather in Paris." },
        replayed[4],
        replayed[5]
      ]
      const cases = [
        // Magistral (2507 and later) and the reasoning_effort models take thinking chunks by default.
        { model: "magistral-medium-latest", config: {}, expected: replayed },
        { model: "mistral-medium-3-5", config: {}, expected: replayed },
        { model: "mistral-small-latest", config: {}, expected: replayed },
        // Magistral 2506 used `<think>` tags and older tokenizers reject thinking chunks: reasoning is left out.
        { model: "magistral-small-2506", config: {}, expected: flattened },
        { model: "mistral-large-latest", config: {}, expected: flattened },
        // The switch overrides the default either way.
        { model: "mistral-large-latest", config: { replayThinking: true }, expected: replayed },
        { model: "magistral-medium-latest", config: { replayThinking: false }, expected: flattened }
      ] as const
      for (const c of cases) {
        server.enqueue(Scripts.completion({ content: "ok" }, "stop"))
        yield* LanguageModel.generateText({ prompt: history }).pipe(
          Effect.provide(Layers.model(server, { model: c.model, config: c.config }))
        )
        const body = server.requests[server.requests.length - 1].body
        assert.deepStrictEqual(MistralRules.validate(body), [])
        assert.deepStrictEqual(body.messages, c.expected, `${c.model} ${JSON.stringify(c.config)}`)
        assert.notInclude(JSON.stringify(body), "Another provider's reasoning.")
      }
      // Never to an OpenAI-compatible server, whatever the switch says.
      compat.enqueue(Scripts.completion({ content: "ok" }, "stop"))
      yield* LanguageModel.generateText({ prompt: history }).pipe(
        Effect.provide(
          Layers.model(compat, { flavour: "compat", model: "magistral-small-latest", config: { replayThinking: true } })
        )
      )
      assert.notInclude(compat.requests[0].raw, "thinking")
      assert.notInclude(compat.requests[0].raw, "Count them")
    }))

  it.effect("the validating fake server checks the content chunks of assistant messages", () =>
    Effect.sync(() => {
      const violations = MistralRules.validate({
        model: "m",
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: [{ type: "text", text: "hm" }], signature: "x" },
              { type: "reasoning", text: "hm" },
              { type: "text", text: "ok" }
            ]
          },
          { role: "user", content: "and?" }
        ]
      })
      assert.deepStrictEqual(violations.map((violation) => violation.loc?.join(".")), [
        "body.messages.1.content.0.signature",
        "body.messages.1.content.1.type"
      ])
    }))
})
