import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentSpec, Permissions } from "@parley/core"
import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
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

const TestLayer = Layer.unwrapEffect(Effect.gen(function*() {
  const model = yield* ScriptedModel.make([])
  return LocalTransport.layer.pipe(
    Layer.provide([SessionStore.layerMemory, Connectors.layerEmpty, Models.layer(Models.single(model.languageModel))])
  )
}))

describe("Subagents: warnings", () => {
  it.effect("a policy that denies agents.spawn is reported when the session starts", () =>
    Effect.gen(function*() {
      const logged: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        logged.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      })
      const denying = Agent.make({
        name: "shop",
        model: "scripted",
        permissions: new Permissions.PermissionPolicy({ default: "deny" }),
        subagents: [researcher]
      })
      yield* Agent.startSession(denying).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
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
      yield* Agent.startSession(allowing).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      assert.strictEqual(logged.length, 1)
    }).pipe(Effect.provide(TestLayer)))
})
