import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Permissions, Session, ToolSpec, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer, Stream } from "effect"

const getLocation = new ToolSpec.ToolSpec({
  id: "client.get_location" as ToolSpec.ToolSpec["id"],
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: { precision: { type: "string", enum: ["city", "street"] } } },
  success: {
    type: "object",
    properties: { city: { type: "string" }, country: { type: "string" } },
    required: ["city", "country"]
  },
  annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
})

const assistant = Agent.make({
  name: "assistant",
  model: "scripted",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  connectors: ["gmail"],
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [new Permissions.PermissionRule({ tools: ["client.get_location"], decision: "ask" })]
  })
})

const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  if (results.length === 0) {
    return ScriptedModel.reply({
      toolCalls: [{ name: "gmail_latest_email", params: {} }, { name: "get_location", params: { precision: "city" } }]
    })
  }
  const location = results.find((r) => r.name === "get_location")
  const where = location && !location.isFailure
    ? `You're in ${(location.result as { city: string }).city}, ${(location.result as { country: string }).country}.`
    : "I could not find where you are."
  return ScriptedModel.text(where)
}

const TestLayer = LocalTransport.layer.pipe(
  Layer.provide([
    SessionStore.layerMemory,
    Connectors.layer([Connectors.demoMailbox()]),
    RuntimeTools.layerEmpty,
    Layer.effect(Models.Models, Effect.map(ScriptedModel.fromFunction(brain), (m) => Models.single(m.languageModel)))
  ])
)

describe("Engine", () => {
  it.effect("a run with handlers completes", () =>
    Effect.gen(function*() {
      const state = yield* Agent.run(assistant, "Where am I, and what is my latest email about?").pipe(
        Effect.provide(
          CallbackHandler.layer([
            CallbackHandler.allowReadOnly,
            CallbackHandler.denyAllSignIns,
            { clientTool: () => Answer.ClientToolResult.success({ city: "Lyon", country: "France" }) }
          ])
        )
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.strictEqual(state.text, "You're in Lyon, France.")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a run without handlers blocks, answers by id", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(assistant)
      let state = yield* Session.run(session, "Where am I?")
      const seen: Array<string> = []
      while (state._tag === "Blocked") {
        const turn = yield* Session.turn(session, state.turnId)
        for (const callback of state.callbacks) {
          seen.push(callback.kind)
          const answer = callback._tag === "OpenApproval"
            ? new Answer.AllowApproval()
            : callback._tag === "OpenClientToolCall"
            ? Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
            : new Answer.SignInAnswer({ denied: callback.requests.map((r) => r.id) })
          yield* Turn.answer(turn, callback.id, answer)
        }
        state = yield* Turn.result(turn, { after: state })
      }
      assert.deepStrictEqual(seen, ["sign_in", "approval", "client_tool"])
      assert.strictEqual(state._tag, "Completed")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a cancelled turn gives its unfinished tool calls a result", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(assistant)
      const blocked = yield* Session.run(session, "Where am I?")
      assert.strictEqual(blocked._tag, "Blocked")
      yield* Session.cancel(session)
      const turn = yield* Session.turn(session, blocked.turnId)
      const events = yield* Stream.runCollect(Turn.events(turn))
      const completed = events.filter((e) => e._tag === "ToolCallCompleted")
      assert.deepStrictEqual(completed.map((e) => [e.name, e.isFailure, e.result]), [
        ["gmail_latest_email", true, "The call to gmail_latest_email was cancelled."],
        ["get_location", true, "The call to get_location was cancelled."]
      ])
      const last = events[events.length - 1]
      assert.strictEqual(last._tag === "TurnEnded" ? last.state._tag : last._tag, "Cancelled")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a definition that cannot run is refused with a typed error before any session exists", () =>
    Effect.gen(function*() {
      const unknownConnector = yield* Effect.flip(Agent.startSession(Agent.make({ name: "a", connectors: ["slack"] })))
      assert.strictEqual(unknownConnector._tag, "AgentInvalid")
      if (unknownConnector._tag === "AgentInvalid") {
        assert.deepStrictEqual(unknownConnector.issues, ["no connector named slack"])
      }
      const badPattern = yield* Effect.flip(Agent.startSession(Agent.make({
        name: "b",
        permissions: new Permissions.PermissionPolicy({
          default: "allow",
          rules: [new Permissions.PermissionRule({ tools: ["mail.*"], decision: "ask" })]
        })
      })))
      assert.strictEqual(badPattern._tag, "PolicyInvalid")
      const badTool = new ToolSpec.ToolSpec({ ...getLocation, id: "client.bad name" as ToolSpec.ToolSpec["id"] }, {
        disableChecks: true
      })
      const badName = yield* Effect.flip(Agent.startSession(Agent.make({ name: "c", tools: [badTool] })))
      assert.strictEqual(badName._tag, "AgentInvalid")
      assert.match(badName.message, /client\.bad name/)
      const badId = yield* Effect.flip(Agent.session(assistant, "session-1"))
      assert.strictEqual(badId._tag, "InvalidId")
    }).pipe(Effect.provide(TestLayer)))
})
