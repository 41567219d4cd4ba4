/**
 * A whole turn of the callbacks guide through the Mistral provider: the runtime (LocalTransport, in-memory store,
 * the demo mailbox, `Models.layer(MistralModels.make(...))`) talks to a validating fake Mistral server on
 * 127.0.0.1. The model calls the client tool `get_location` (streamed in fragments), the policy asks for approval,
 * the handlers allow it and answer the tool, and the model streams its final answer in chunks.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import {
  Agent,
  Answer,
  type Callback,
  CallbackHandler,
  Permissions,
  Session,
  ToolSpec,
  Turn,
  type TurnEvent
} from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { Effect, Layer, Redacted, Stream } from "effect"
import * as MistralModels from "../src/MistralModels.js"
import type { WireMessage } from "./fixtures/FakeServer.js"
import * as FakeServer from "./fixtures/FakeServer.js"
import { FAST_RETRY } from "./fixtures/Layers.js"
import * as MistralRules from "./fixtures/MistralRules.js"
import * as Scripts from "./fixtures/Scripts.js"

// ----------------------------------------------------------------------------
// The guide's agent, with its client tool described by JSON Schema (as an AgentSpec carries it)
// ----------------------------------------------------------------------------

const LOCATION_PARAMETERS = {
  type: "object",
  properties: { precision: { type: "string", enum: ["city", "street"] } }
}

const getLocation = new ToolSpec.ToolSpec({
  id: "client.get_location" as ToolSpec.ToolSpec["id"],
  name: "get_location",
  description: "The user's current location.",
  parameters: LOCATION_PARAMETERS,
  success: {
    type: "object",
    properties: { city: { type: "string" }, country: { type: "string" } },
    required: ["city", "country"]
  },
  annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
})

const INSTRUCTIONS = "Use your tools. Answer in one short sentence."
const QUESTION = "Where am I?"
const FOLLOW_UP = "And which country is that in?"

const assistant = Agent.make({
  name: "assistant",
  model: "mistral-large-latest",
  instructions: INSTRUCTIONS,
  tools: [getLocation],
  connectors: ["gmail"],
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [new Permissions.PermissionRule({ tools: ["client.get_location"], decision: "ask" })]
  })
})

const LOCATION = { city: "Lyon", country: "France" }

/** The id GLM on La Plateforme gives a fragmented call: not a Mistral id, so the provider must remap it on replay. */
const CALL = { id: "chatcmpl-tool-9f149c74c42f265b", name: "get_location", arguments: "" }
const ANSWER_CHUNKS = ["You're in ", "Lyon, ", "France."]

const ID = /^[a-zA-Z0-9]{9}$/

// ----------------------------------------------------------------------------
// Wiring
// ----------------------------------------------------------------------------

const runtime = (models: Models.Service) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer([Connectors.demoMailbox()]),
      RuntimeTools.layerEmpty,
      Models.layer(models)
    ])
  )

/** The callbacks the handlers saw, in order. */
const makeHandlers = () => {
  const seen: Array<Callback.Callback> = []
  const layer = CallbackHandler.layer({
    approval: (context) => {
      seen.push(context.callback)
      return new Answer.AllowApproval()
    },
    clientTool: (callback) => {
      seen.push(callback)
      return Answer.ClientToolResult.success(LOCATION)
    }
  })
  return { seen, layer }
}

/** A fake Mistral server (validating, with a key) and the model resolver pointed at it. */
const setup = Effect.gen(function*() {
  const server = yield* FakeServer.make({ apiKey: "test-key", validate: true })
  const models = yield* MistralModels.make({
    apiKey: Redacted.make("test-key"),
    apiUrl: `${server.url}/v1`,
    retry: FAST_RETRY
  })
  return { server, models }
})

const turnEvents = (sessionId: string, turnId: Turn.Turn["turnId"]) =>
  Effect.gen(function*() {
    const session = yield* Agent.session(assistant, sessionId)
    const turn = yield* Session.turn(session, turnId)
    return yield* Stream.runCollect(Turn.events(turn))
  })

/** The event log as tags, with the callback kind beside `CallbackOpened`; `TurnBlocked` is left out (timing). */
const shape = (events: ReadonlyArray<TurnEvent.TurnEvent>) =>
  events.filter((event) => event._tag !== "TurnBlocked").map((event) =>
    event._tag === "CallbackOpened" ? `CallbackOpened(${event.callback.kind})` : event._tag
  )

const stripIds = (messages: ReadonlyArray<WireMessage>) =>
  messages.map((message) => ({
    ...message,
    ...(message.tool_calls === undefined
      ? {}
      : { tool_calls: message.tool_calls.map((call) => ({ ...call, id: "<id>" })) }),
    ...(message.tool_call_id === undefined ? {} : { tool_call_id: "<id>" })
  }))

/** What the server must receive once the tool call is settled (ids aside). */
const afterToolCall = [
  { role: "system", content: INSTRUCTIONS },
  { role: "user", content: QUESTION },
  {
    role: "assistant",
    content: "",
    tool_calls: [{
      id: "<id>",
      type: "function",
      function: { name: "get_location", arguments: JSON.stringify({ precision: "city" }) }
    }]
  },
  { role: "tool", name: "get_location", tool_call_id: "<id>", content: JSON.stringify(LOCATION) }
]

// ----------------------------------------------------------------------------
// Tests
// ----------------------------------------------------------------------------

describe("a callbacks-guide turn through the Mistral provider", () => {
  it.effect("completes with the streamed text; the log and the requests follow Mistral's rules", () =>
    Effect.gen(function*() {
      const { models, server } = yield* setup
      server.enqueue(
        Scripts.mistralFragmentedToolCall(CALL, ["{\"preci", "sion\": ", "\"city\"}"]),
        Scripts.mistralText(ANSWER_CHUNKS)
      )
      const handlers = makeHandlers()

      yield* Effect.gen(function*() {
        const live: Array<TurnEvent.TurnEvent> = []
        const state = yield* Agent.run(assistant, QUESTION, { onEvent: (event) => void live.push(event) }).pipe(
          Effect.provide(handlers.layer)
        )
        assert.strictEqual(state._tag, "Completed")
        if (state._tag !== "Completed") return
        assert.strictEqual(state.text, "You're in Lyon, France.")

        // The handlers saw the approval, then the client tool call, both for the streamed call with its arguments.
        assert.deepStrictEqual(handlers.seen.map((callback) => callback.kind), ["approval", "client_tool"])
        for (const callback of handlers.seen) {
          assert.strictEqual(callback._tag === "OpenSignIn" ? undefined : callback.request.toolCallId, CALL.id)
          assert.deepStrictEqual(callback._tag === "OpenSignIn" ? undefined : callback.request.arguments, {
            precision: "city"
          })
        }

        // The event log, in order.
        const events = yield* turnEvents(state.sessionId, state.turnId)
        assert.deepStrictEqual(shape(events), [
          "TurnQueued",
          "TurnStarted",
          "ModelStepStarted",
          "ToolCallStarted",
          "CallbackOpened(approval)",
          "CallbackResolved",
          "CallbackOpened(client_tool)",
          "CallbackResolved",
          "ToolCallCompleted",
          "ModelStepStarted",
          "MessageCompleted",
          "TurnEnded"
        ])
        // The answer streamed to the live reader chunk by chunk; the log keeps the step's whole message.
        const deltas = live.flatMap((event) => event._tag === "MessageDelta" ? [event.delta] : [])
        assert.deepStrictEqual(deltas, ANSWER_CHUNKS)
        assert.deepStrictEqual(
          shape(live.filter((event) => event._tag !== "MessageDelta")),
          shape(events)
        )
        let opened: string | undefined
        for (const event of events) {
          if (event._tag === "CallbackOpened") opened = event.callback.id
          if (event._tag === "CallbackResolved") {
            // Each callback is resolved right after it opened, by the handlers' answer.
            assert.strictEqual(event.callbackId, opened)
            assert.strictEqual(event.resolution, "answered")
          }
          if (event._tag === "ToolCallStarted" || event._tag === "ToolCallCompleted") {
            assert.strictEqual(event.toolCallId, CALL.id)
            assert.strictEqual(event.toolId, "client.get_location")
          }
          if (event._tag === "ToolCallCompleted") {
            assert.isFalse(event.isFailure)
            assert.deepStrictEqual(event.result, LOCATION)
          }
        }
        const ended = events[events.length - 1]
        assert.strictEqual(ended._tag === "TurnEnded" ? ended.state._tag : undefined, "Completed")
        assert.deepStrictEqual(events.map((event) => event.seq), events.map((_, i) => events[0].seq + i))
      }).pipe(Effect.provide(runtime(models)))

      // Two requests, both accepted by the validating server.
      assert.strictEqual(server.requests.length, 2)
      const [first, second] = server.requests
      assert.deepStrictEqual(MistralRules.validate(first.body), [])
      assert.deepStrictEqual(MistralRules.validate(second.body), [])
      assert.strictEqual(first.headers.authorization, "Bearer test-key")
      assert.strictEqual(first.body.model, "mistral-large-latest")
      assert.strictEqual(first.body.stream, true)
      assert.deepStrictEqual(first.body.messages, [
        { role: "system", content: INSTRUCTIONS },
        { role: "user", content: QUESTION }
      ])
      // The client tool goes out with its raw JSON Schema, beside the connector's tools.
      const tools = first.body.tools ?? []
      const location = tools.find((tool) => tool.function.name === "get_location")
      assert.deepStrictEqual(location, {
        type: "function",
        function: { name: "get_location", description: "The user's current location.", parameters: LOCATION_PARAMETERS }
      })
      assert.isTrue(tools.some((tool) => tool.function.name === "gmail_latest_email"))

      // The second request: system / user / assistant (tool_calls, empty content) / tool, with one valid id.
      const messages = second.body.messages
      assert.deepStrictEqual(stripIds(messages), afterToolCall)
      const callId = messages[2].tool_calls?.[0]?.id ?? ""
      assert.match(callId, ID)
      assert.notStrictEqual(callId, CALL.id)
      assert.strictEqual(messages[3].tool_call_id, callId)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("without MISTRAL_API_KEY the session does not start, and the error says what to set", () =>
    Effect.gen(function*() {
      const server = yield* FakeServer.make({ validate: true })
      const models = yield* MistralModels.make({ apiUrl: `${server.url}/v1` })
      const error = yield* Effect.flip(Agent.run(assistant, QUESTION)).pipe(Effect.provide(runtime(models)))
      assert.strictEqual(error._tag, "AgentInvalid")
      if (error._tag === "AgentInvalid") {
        assert.deepStrictEqual(error.issues, ["set MISTRAL_API_KEY to use mistral-large-latest"])
      }
      assert.strictEqual(server.requests.length, 0)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("a second turn replays the whole history, and the validating server accepts it", () =>
    Effect.gen(function*() {
      const { models, server } = yield* setup
      server.enqueue(
        Scripts.mistralFragmentedToolCall(CALL, ["{\"precision\":", " \"city\"}"]),
        Scripts.mistralText(ANSWER_CHUNKS),
        Scripts.mistralText(["That is in ", "France."])
      )
      const handlers = makeHandlers()

      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        const first = yield* Session.run(session, QUESTION)
        assert.strictEqual(first._tag, "Completed")
        const second = yield* Session.run(session, FOLLOW_UP)
        assert.strictEqual(second._tag, "Completed")
        if (second._tag === "Completed") assert.strictEqual(second.text, "That is in France.")
        const events = yield* turnEvents(second.sessionId, second.turnId)
        assert.deepStrictEqual(shape(events), [
          "TurnQueued",
          "TurnStarted",
          "ModelStepStarted",
          "MessageCompleted",
          "TurnEnded"
        ])
      }).pipe(Effect.provide(handlers.layer), Effect.provide(runtime(models)))

      assert.strictEqual(server.requests.length, 3)
      const replay = server.requests[2]
      assert.deepStrictEqual(MistralRules.validate(replay.body), [])
      assert.deepStrictEqual(stripIds(replay.body.messages), [
        ...afterToolCall,
        { role: "assistant", content: "You're in Lyon, France." },
        { role: "user", content: FOLLOW_UP }
      ])
      // The same remapped id as in the turn's own second request: the history is stable across requests.
      const ids = (
        body: FakeServer.RequestBody
      ) => [body.messages[2].tool_calls?.[0]?.id, body.messages[3].tool_call_id]
      assert.deepStrictEqual(ids(replay.body), ids(server.requests[1].body))
      assert.match(String(ids(replay.body)[0]), ID)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))

  it.effect("parallel calls with text, and a cancelled turn's unfinished calls, still replay as valid requests", () =>
    Effect.gen(function*() {
      const { models, server } = yield* setup
      // Mistral's shape: text first, then both calls whole in the finish chunk.
      const parallel = (ids: readonly [string, string]) =>
        Scripts.sse([
          Scripts.chunk({ role: "assistant", content: "" }),
          Scripts.chunk({ content: "Let me check." }),
          Scripts.chunk({
            content: null,
            tool_calls: [
              { id: ids[0], type: "function", index: 0, function: { name: "gmail_latest_email", arguments: "{}" } },
              { id: ids[1], type: "function", index: 1, function: { name: "get_location", arguments: "{}" } }
            ]
          }, { finish: "tool_calls", usage: Scripts.USAGE }),
          "[DONE]"
        ])
      server.enqueue(
        parallel(["aB3xK9mP2", "Zq81LmN0c"]),
        Scripts.mistralText(["Done."]),
        parallel(["D681PevKs", "gSIMJiOkT"]),
        Scripts.mistralText(["Fine."])
      )
      const handlers = CallbackHandler.layer([
        CallbackHandler.allowReadOnly,
        CallbackHandler.denyAllSignIns,
        { clientTool: () => Answer.ClientToolResult.success(LOCATION) }
      ])

      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant)
        const answered = yield* Session.run(session, QUESTION).pipe(Effect.provide(handlers))
        assert.strictEqual(answered._tag, "Completed")
        // Nobody answers: the turn blocks on the sign-in and the approval, then is cancelled.
        const blocked = yield* Session.run(session, "Again?")
        assert.strictEqual(blocked._tag, "Blocked")
        yield* Session.cancel(session)
        const after = yield* Session.run(session, FOLLOW_UP).pipe(Effect.provide(handlers))
        assert.strictEqual(after._tag, "Completed")
        if (after._tag === "Completed") assert.strictEqual(after.text, "Fine.")
      }).pipe(Effect.provide(runtime(models)))

      assert.strictEqual(server.requests.length, 4)
      for (const request of server.requests) assert.deepStrictEqual(MistralRules.validate(request.body), [])
      // After the parallel calls: the text apart, the calls with empty content, one tool message per call in order.
      const second = server.requests[1].body.messages
      assert.deepStrictEqual(second.map((message) => message.role), [
        "system",
        "user",
        "assistant",
        "assistant",
        "tool",
        "tool"
      ])
      assert.deepStrictEqual(second[2], { role: "assistant", content: "Let me check." })
      assert.strictEqual(second[3].content, "")
      assert.deepStrictEqual(second[3].tool_calls?.map((call) => call.id), ["aB3xK9mP2", "Zq81LmN0c"])
      assert.deepStrictEqual(second.slice(4).map((message) => message.tool_call_id), ["aB3xK9mP2", "Zq81LmN0c"])
      assert.strictEqual(second[5].content, JSON.stringify(LOCATION))
      // The last request carries both turns' calls, each with exactly one tool message, and ends with the user.
      const last = server.requests[3].body.messages
      const calls = last.flatMap((message) => message.tool_calls ?? []).map((call) => call.id)
      const results = last.flatMap((message) => message.role === "tool" ? [message.tool_call_id] : [])
      assert.deepStrictEqual(calls, ["aB3xK9mP2", "Zq81LmN0c", "D681PevKs", "gSIMJiOkT"])
      assert.deepStrictEqual(results, calls)
      assert.deepStrictEqual(last[last.length - 1], { role: "user", content: FOLLOW_UP })
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
  it.effect("a Magistral turn's thinking is kept in the log and replayed to Mistral on the next turn", () =>
    Effect.gen(function*() {
      const { models, server } = yield* setup
      server.enqueue(Scripts.mistralReasoning(), Scripts.mistralText(["Bye."]))
      const thinker = Agent.make({ name: "thinker", model: "magistral-medium-latest", instructions: "Be brief." })
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(thinker)
        const first = yield* Session.run(session, "Hi!")
        assert.strictEqual(first._tag === "Completed" ? first.text : first._tag, "Hello!")
        const events = yield* turnEvents(first.sessionId, first.turnId)
        const completed = events.filter((event) => event._tag === "MessageCompleted")
        assert.deepStrictEqual(
          completed.map((event) => event._tag === "MessageCompleted" ? event.reasoning.map((r) => r.text) : []),
          [["The user greets. Answer briefly."]]
        )
        yield* Session.run(session, "Bye!")
      }).pipe(Effect.provide(runtime(models)))
      const replay = server.requests[1].body.messages
      assert.deepStrictEqual(MistralRules.validate(server.requests[1].body), [])
      const assistantTurn = replay.find((message) => message.role === "assistant")
      assert.deepStrictEqual(assistantTurn?.content, [
        { type: "thinking", thinking: [{ type: "text", text: "The user greets. Answer briefly." }] },
        { type: "text", text: "Hello!" }
      ])
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
