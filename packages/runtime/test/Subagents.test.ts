import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentSpec, Answer, CallbackHandler, Permissions, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Chunk, Effect, Layer, Logger, Schema, Stream } from "effect"

const PRICES: Record<string, string> = { atlas: "1,200 EUR", nova: "850 EUR" }

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, ({ product }) => ({ price: PRICES[product.toLowerCase()] ?? "unknown" }))

const researcher = Agent.make({
  name: "researcher",
  description: "Looks up one product and reports its price.",
  instructions: "Call lookup_price once, then answer with the product name and its price.",
  tools: [lookupPrice],
  builtins: new AgentSpec.Builtins({ subagents: false })
})

const agent = Agent.make({
  name: "shop",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start one researcher per product, wait for every result, then answer in one sentence.",
  subagents: [researcher]
})

const parentBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  if (results.length === 0) {
    return ScriptedModel.reply({
      toolCalls: [
        { name: "agents_spawn", params: { agent: "researcher", task: "Atlas" } },
        { name: "agents_spawn", params: { agent: "researcher", task: "Nova" } }
      ]
    })
  }
  const waited = results.find((r) => r.name === "agents_wait")
  if (waited === undefined) {
    const sessionIds = results.map((r) => (r.result as { sessionId: string }).sessionId)
    return ScriptedModel.toolCall("agents_wait", { sessionIds })
  }
  const texts = (waited.result as ReadonlyArray<{ text: string }>).map((r) => r.text.replace(/\.$/, ""))
  return ScriptedModel.text(`${texts[0]} and ${texts[1].replace(/^The/, "the")}.`)
}

const researcherBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  const product = ScriptedModel.lastUserText(call) ?? ""
  if (results.length === 0) return ScriptedModel.toolCall("lookup_price", { product })
  return ScriptedModel.text(`The ${product} costs ${(results[0].result as { price: string }).price}.`)
}

const TestLayer = Layer.unwrapEffect(Effect.gen(function*() {
  const parent = yield* ScriptedModel.fromFunction(parentBrain)
  const child = yield* ScriptedModel.fromFunction(researcherBrain)
  return LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layerEmpty,
      Models.layer(Models.byAgent({ shop: parent.languageModel, researcher: child.languageModel }))
    ])
  )
}))

describe("Subagents", () => {
  it.effect("one handler answers the whole tree", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(agent)
      const state = yield* Session.run(session, "What do the Atlas and the Nova cost?").pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn", "client.lookup_price"])))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") {
        assert.strictEqual(state.text, "The Atlas costs 1,200 EUR and the Nova costs 850 EUR.")
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("Blocked lists the tree; answers go through the root turn", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(agent)
      let state = yield* Session.run(session, "What do the Atlas and the Nova cost?")
      const seen: Array<string> = []
      const sizes: Array<number> = []
      while (state._tag === "Blocked") {
        const turn = yield* Session.turn(session, state.turnId)
        sizes.push(state.callbacks.length)
        assert.strictEqual(state.turnId, turn.turnId)
        for (const callback of state.callbacks) {
          if (callback._tag === "OpenApproval") {
            seen.push(`${callback.sessionId === session.id} ${callback.request.tool.id}`)
            yield* Turn.answer(turn, callback.id, new Answer.AllowApproval())
          }
        }
        state = yield* Turn.result(turn, { after: state })
      }
      assert.deepStrictEqual(seen, [
        "true agents.spawn",
        "true agents.spawn",
        "false client.lookup_price",
        "false client.lookup_price"
      ])
      // Both spawns, then both children's approvals, each pair in one Blocked.
      assert.deepStrictEqual(sizes, [2, 2])
      assert.strictEqual(state._tag, "Completed")
    }).pipe(Effect.provide(TestLayer)))
})

const deploy = Tool.make("deploy", {
  description: "Deploy the service.",
  success: Schema.Struct({ deployed: Schema.Boolean })
}, () => ({ deployed: true }))

const deployer = Agent.make({
  name: "deployer",
  description: "Deploys the service.",
  instructions: "Call deploy.",
  tools: [deploy],
  builtins: new AgentSpec.Builtins({ subagents: false })
})

const ops = Agent.make({
  name: "ops",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start a deployer when asked to deploy.",
  subagents: [deployer]
})

const opsBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const question = ScriptedModel.lastUserText(call) ?? ""
  const results = ScriptedModel.toolResults(call)
  const spawned = results.find((r) => r.name === "agents_spawn")
  if (question.startsWith("Deploy") && spawned === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent: "deployer", task: "Deploy the service." })
  }
  if (question.startsWith("Stop") && !results.some((r) => r.name === "agents_interrupt")) {
    return ScriptedModel.toolCall("agents_interrupt", {
      sessionId: (spawned?.result as { sessionId: string }).sessionId
    })
  }
  return ScriptedModel.text(
    question.startsWith("Deploy") ? "The deployer is on it." : question.startsWith("Stop") ? "Stopped." : "CI is green."
  )
}

const deployerBrain = (call: ScriptedModel.Call): ScriptedModel.Reply =>
  ScriptedModel.toolResults(call).length === 0 ? ScriptedModel.toolCall("deploy", {}) : ScriptedModel.text("Deployed.")

const OpsLayer = Layer.unwrapEffect(Effect.gen(function*() {
  const parent = yield* ScriptedModel.fromFunction(opsBrain)
  const child = yield* ScriptedModel.fromFunction(deployerBrain)
  return LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layerEmpty,
      Models.layer(Models.byAgent({ ops: parent.languageModel, deployer: child.languageModel }))
    ])
  )
}))

describe("Subagents of earlier turns", () => {
  it.effect("a scoped handler leaves an earlier turn's subagent approval open", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(ops)
      const first = yield* Session.run(session, "Deploy the service").pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
      )
      assert.strictEqual(first._tag, "Completed")
      const allowAll = { approval: () => new Answer.AllowApproval() }
      const second = yield* Session.run(session, "Is CI green?").pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.scopedToWaitingTurn(allowAll)))
      )
      assert.strictEqual(second._tag, "Completed")
      const turn = yield* Session.turn(session, second.turnId)
      const open = yield* Turn.openCallbacks(turn)
      assert.deepStrictEqual(open.map((cb) => cb._tag === "OpenApproval" ? cb.request.tool.id : cb._tag), [
        "client.deploy"
      ])
      assert.notStrictEqual(open[0].sessionId, session.id)
    }).pipe(Effect.provide(OpsLayer)))
})

describe("Subagents: interrupt, depth, warnings", () => {
  it.effect("interrupting a child resolves its open callbacks cancelled", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(ops)
      const spawnOnly = CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"]))
      yield* Session.run(session, "Deploy the service").pipe(Effect.provide(spawnOnly))
      const first = yield* Session.run(session, "Is CI green?")
      const pendingDeploy = yield* Turn.openCallbacks(yield* Session.turn(session, first.turnId))
      assert.strictEqual(pendingDeploy.length, 1)
      const stopped = yield* Session.run(session, "Stop the deployer").pipe(Effect.provide(spawnOnly))
      assert.strictEqual(stopped._tag, "Completed")
      const turn = yield* Session.turn(session, stopped.turnId)
      const events = yield* Stream.runCollect(Turn.events(turn))
      const resolved = Chunk.toReadonlyArray(events).filter((e) => e._tag === "CallbackResolved")
      assert.deepStrictEqual(resolved.map((e) => [e.callbackId, e.resolution]), [[pendingDeploy[0].id, "cancelled"]])
      assert.deepStrictEqual(yield* Turn.openCallbacks(turn), [])
    }).pipe(Effect.provide(OpsLayer)))

  it.effect("a subagent that spawns a subagent (depth 2) answers through the root", () =>
    Effect.gen(function*() {
      const leaf = Agent.make({ name: "leaf", instructions: "Answer.", tools: [lookupPrice] })
      const middle = Agent.make({ name: "middle", instructions: "Delegate.", subagents: [leaf] })
      const top = Agent.make({ name: "top", model: "scripted", permissionMode: "ask", subagents: [middle] })
      const delegate = (agent: string) => (call: ScriptedModel.Call): ScriptedModel.Reply => {
        const results = ScriptedModel.toolResults(call)
        const spawned = results.find((r) => r.name === "agents_spawn")
        if (spawned === undefined) return ScriptedModel.toolCall("agents_spawn", { agent, task: "Atlas" })
        const waited = results.find((r) => r.name === "agents_wait")
        if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
        return ScriptedModel.text((waited.result as ReadonlyArray<{ text: string }>)[0].text)
      }
      const models = Models.byAgent({
        top: (yield* ScriptedModel.fromFunction(delegate("middle"))).languageModel,
        middle: (yield* ScriptedModel.fromFunction(delegate("leaf"))).languageModel,
        leaf: (yield* ScriptedModel.fromFunction(researcherBrain)).languageModel
      })
      const asked: Array<string> = []
      const state = yield* Agent.run(top, "What does the Atlas cost?").pipe(
        Effect.provide(CallbackHandler.layer({
          approval: (context, request) => {
            asked.push(`${context.fromWaitingTurn} ${request.tool.id}`)
            return new Answer.AllowApproval()
          }
        })),
        Effect.provide(LocalTransport.layer.pipe(
          Layer.provide([SessionStore.layerMemory, Connectors.layerEmpty, Models.layer(models)])
        ))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.strictEqual(state.text, "The Atlas costs 1,200 EUR.")
      assert.deepStrictEqual(asked, ["true agents.spawn", "true agents.spawn", "true client.lookup_price"])
    }))

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
