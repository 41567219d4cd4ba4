import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentSpec, CallbackHandler, Ids, Permissions, ToolSpec } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer, Logger } from "effect"

// The tree scenarios (handlers and Blocked across the tree, subagents of earlier turns, interrupt, depth 2) run for
// every transport in the contract suite (`@parley/testing/TransportSuite`, see LocalTransport.test.ts). What stays
// here is the engine's own: the warning it logs when a session starts.

const researcher = Agent.make({
  name: "researcher",
  description: "Looks up one product and reports its price.",
  instructions: "Answer with the product name and its price.",
  builtins: new AgentSpec.Builtins({ subagents: false })
})

const TestLayer = Layer.unwrap(Effect.gen(function*() {
  const model = yield* ScriptedModel.make([])
  return LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layerEmpty,
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ])
  )
}))

describe("Subagents: warnings", () => {
  it.effect("a policy that denies agents.spawn is reported when the session starts", () =>
    Effect.gen(function*() {
      const logged: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        logged.push(`${logLevel.toUpperCase()} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const denying = Agent.make({
        name: "shop",
        model: "scripted",
        permissions: new Permissions.PermissionPolicy({ default: "deny" }),
        subagents: [researcher]
      })
      yield* Agent.startSession(denying).pipe(Effect.provide(Logger.layer([logger])))
      assert.strictEqual(logged.length, 1)
      assert.match(
        logged[0],
        /^WARN .*declares subagents.*denies 'agents\.spawn'.*rule\(\["agents\.spawn"\], "allow"\)/
      )
      const allowing = Agent.make({
        name: "shop",
        model: "scripted",
        permissions: new Permissions.PermissionPolicy({
          default: "deny",
          rules: [new Permissions.PermissionRule({ tools: ["agents.spawn"], decision: "allow" })]
        }),
        subagents: [researcher]
      })
      yield* Agent.startSession(allowing).pipe(Effect.provide(Logger.layer([logger])))
      assert.strictEqual(logged.length, 1)
    }).pipe(Effect.provide(TestLayer)))
})

describe("Subagents: blocked accounting", () => {
  it.effect("waiting for one subagent while another waits on an approval is not a block", () =>
    Effect.gen(function*() {
      const deploy = new ToolSpec.ToolSpec({
        id: Ids.ToolId.make("client.deploy"),
        name: "deploy",
        description: "Deploy.",
        parameters: { type: "object", properties: {} }
      })
      const slow = Agent.make({ name: "slow", instructions: "Deploy.", tools: [deploy] })
      const fast = Agent.make({ name: "fast", instructions: "Say hello." })
      const parent = Agent.make({ name: "parent", model: "scripted", permissionMode: "ask", subagents: [slow, fast] })
      const brains: Record<string, (call: ScriptedModel.Call) => ScriptedModel.Reply> = {
        parent: (call) => {
          const results = ScriptedModel.toolResults(call)
          const spawned = results.filter((r) => r.name === "agents_spawn")
          if (spawned.length === 0) {
            return ScriptedModel.reply({
              toolCalls: [
                { name: "agents_spawn", params: { agent: "slow", task: "Deploy." } },
                { name: "agents_spawn", params: { agent: "fast", task: "Say hello." } }
              ]
            })
          }
          const waited = results.find((r) => r.name === "agents_wait")
          if (waited === undefined) {
            return ScriptedModel.toolCall("agents_wait", {
              sessionIds: [(spawned[1].result as { sessionId: string }).sessionId]
            })
          }
          return ScriptedModel.text(`fast says: ${(waited.result as ReadonlyArray<{ text: string }>)[0].text}`)
        },
        slow: (call) =>
          ScriptedModel.toolResults(call).length === 0
            ? ScriptedModel.toolCall("deploy", {})
            : ScriptedModel.text("Done."),
        fast: () => ScriptedModel.text("Hello.")
      }
      const models: Record<string, LanguageModelService> = {}
      for (const [name, brain] of Object.entries(brains)) {
        models[name] = (yield* ScriptedModel.fromFunction(brain)).languageModel
      }
      // The handler approves spawns only: slow's deploy approval stays open, and nothing waits for it.
      for (let i = 0; i < 5; i++) {
        const state = yield* Agent.run(parent, "Go").pipe(
          Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"]))),
          Effect.provide(LocalTransport.layer.pipe(
            Layer.provide([
              SessionStore.layerMemory,
              Connectors.layerEmpty,
              RuntimeTools.layerEmpty,
              Models.layer(Models.byAgent(models))
            ])
          ))
        )
        assert.strictEqual(state._tag, "Completed")
        if (state._tag === "Completed") assert.strictEqual(state.text, "fast says: Hello.")
      }
    }))
})

type LanguageModelService = Parameters<typeof Models.single>[0]
