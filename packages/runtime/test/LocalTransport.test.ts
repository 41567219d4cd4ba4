import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Inbox, Session, type Transport, Turn } from "@parley/core"
import { ArgumentCondition, PermissionPolicy } from "@parley/policy"
import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { Cause, Effect, Exit, Layer, Logger, Schema } from "effect"
import { runtime } from "./transports.js"

// The whole transport contract on the engine in memory; the same with idle trees evicted (LocalTransport.evicted)
// and rebuilt from snapshots (LocalTransport.snapshots) run in files of their own, so that they run alongside this one.
TransportSuite.suite("LocalTransport", runtime(LocalTransport.layer))

// ----------------------------------------------------------------------------
// layerMemory: the one-line runtime
// ----------------------------------------------------------------------------

const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  success: Schema.Struct({ city: Schema.String, country: Schema.String }),
  annotations: ToolAnnotations.readOnly
})

const assistant = Agent.make({
  name: "assistant",
  model: "mistral-large-latest",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  permissionMode: "ask"
})

const Handlers = CallbackHandler.layer([
  CallbackHandler.allowReadOnly,
  CallbackHandler.denyAllSignIns,
  { clientTool: ClientTool.answers(getLocation.answer(() => ({ city: "Lyon", country: "France" }))) }
])

const locate = [ScriptedModel.toolCall("get_location", {}), ScriptedModel.text("You're in Lyon, France.")]

describe("LocalTransport.layerMemory", () => {
  it.effect("runs an agent on the LanguageModel in context, with nothing else to provide", () =>
    Effect.gen(function*() {
      const state = yield* Agent.run(assistant, "Where am I?").pipe(Effect.provide(Handlers))
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.strictEqual(state.text, "You're in Lyon, France.")
      // the scripted model was driven exactly as scripted: it is the model every agent ran on
      yield* ScriptedModel.assertComplete
    }).pipe(
      Effect.provide(LocalTransport.layerMemory().pipe(Layer.provideMerge(ScriptedModel.layer(locate))))
    ))

  it.effect("resolves models with the given resolver instead of the context", () =>
    Effect.gen(function*() {
      const scripted = yield* ScriptedModel.make(locate)
      const runtime = LocalTransport.layerMemory({ models: Models.byAgent({ assistant: scripted.languageModel }) })
      const state = yield* Agent.run(assistant, "Where am I?").pipe(Effect.provide(Handlers), Effect.provide(runtime))
      assert.strictEqual(state._tag, "Completed")
      yield* scripted.assertComplete
      const stranger = Agent.make({ name: "stranger", model: "mistral-large-latest", instructions: "Hi." })
      const error = yield* Effect.flip(Agent.run(stranger, "Hello").pipe(Effect.provide(runtime)))
      assert.strictEqual(error._tag, "AgentInvalid")
    }))

  it.effect("has no connectors unless given: an agent naming one does not start", () =>
    Effect.gen(function*() {
      const mailer = Agent.make({ name: "mailer", model: "m", instructions: "Read mail.", connectors: ["gmail"] })
      const error = yield* Effect.flip(Agent.run(mailer, "What is my latest email about?"))
      assert.strictEqual(error._tag, "AgentInvalid")
      assert.include(error.message, "no connector named gmail")
    }).pipe(Effect.provide(LocalTransport.layerMemory().pipe(Layer.provide(ScriptedModel.layer([]))))))

  it.effect("signs agents in to the connectors given", () =>
    Effect.gen(function*() {
      const mailer = Agent.make({ name: "mailer", model: "m", instructions: "Read mail.", connectors: ["gmail"] })
      const state = yield* Agent.run(mailer, "What is my latest email about?")
      assert.strictEqual(state._tag, "Blocked")
      if (state._tag === "Blocked") {
        assert.deepStrictEqual(state.callbacks.map((callback) => callback.kind), ["sign_in"])
      }
    }).pipe(
      Effect.provide(
        LocalTransport.layerMemory({ connectors: [Connectors.demoMailbox()] }).pipe(
          Layer.provide(ScriptedModel.layer([ScriptedModel.toolCall("gmail_latest_email", {})]))
        )
      )
    ))
})

describe("Inbox.answer by id", () => {
  it.effect("takes a plain string id (from a URL, a CLI), parses it and answers the callback it names", () =>
    Effect.gen(function*() {
      const blocked = yield* Agent.run(assistant, "Where am I?")
      assert.strictEqual(blocked._tag, "Blocked")
      if (blocked._tag !== "Blocked") return
      const id: string = blocked.callbacks[0].id // as it comes from outside: an unbranded string
      yield* Inbox.answer(id, new Answer.AllowApproval())
      const session = yield* Agent.session(assistant, blocked.sessionId)
      const turn = yield* Session.turn(session, blocked.turnId)
      const next = yield* Turn.result(turn, { after: blocked })
      assert.strictEqual(next._tag, "Blocked") // now on the client tool call, the approval answered
      if (next._tag === "Blocked") assert.deepStrictEqual(next.callbacks.map((c) => c.kind), ["client_tool"])
    }).pipe(Effect.provide(LocalTransport.layerMemory().pipe(Layer.provide(ScriptedModel.layer(locate))))))

  it.effect("a malformed id is an InvalidId; an id no open callback has is CallbackNotOpen; nothing is sent", () =>
    Effect.gen(function*() {
      const blocked = yield* Agent.run(assistant, "Where am I?")
      const malformed = yield* Effect.flip(Inbox.answer("approve-me", new Answer.AllowApproval()))
      assert.strictEqual(malformed._tag, "InvalidId")
      assert.include(malformed.message, "invalid callbackId \"approve-me\"")
      const unknown = yield* Effect.flip(Inbox.answer("cb_0123456789abcdef", new Answer.AllowApproval()))
      assert.strictEqual(unknown._tag, "CallbackNotOpen")
      assert.deepStrictEqual(
        (yield* Inbox.listOpen()).map((open) => open.callback.id),
        blocked._tag === "Blocked" ? blocked.callbacks.map((c) => c.id) : []
      )
    }).pipe(Effect.provide(LocalTransport.layerMemory().pipe(Layer.provide(ScriptedModel.layer(locate))))))
})

describe("a runtime with no model", () => {
  it.effect("a session does not start: AgentInvalid says which layer provides a LanguageModel, not a defect", () =>
    Effect.gen(function*() {
      // what a program run without type-checking does when it forgets the model: the layer asks for a LanguageModel
      const runtime = LocalTransport.layerMemory() as Layer.Layer<Transport.Transport>
      const error = yield* Effect.flip(Agent.run(assistant, "Where am I?").pipe(Effect.provide(runtime)))
      assert.strictEqual(error._tag, "AgentInvalid")
      assert.include(error.message, "no LanguageModel in context: provide a `LanguageModel` layer")
      assert.include(error.message, "`ScriptedModel.layer(…)` of @parley/testing")
    }))
})

describe("LocalTransport.layer with a service left out", () => {
  it.effect("dies naming each missing service and the layer that provides it, not 'Service not found'", () =>
    Effect.gen(function*() {
      // the guide's old snippet, run without type-checking: RuntimeTools left out
      const runtime = LocalTransport.layer.pipe(
        Layer.provide([SessionStore.layerMemory, Connectors.layerEmpty, Models.layer(Models.byAgent({}))])
      ) as Layer.Layer<Transport.Transport>
      const exit = yield* Effect.exit(Agent.run(assistant, "Where am I?").pipe(Effect.provide(runtime)))
      assert.isTrue(Exit.isFailure(exit))
      const message = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      assert.include(
        message,
        "LocalTransport.layer: the engine needs RuntimeTools (`RuntimeTools.layer(...tools)` or `RuntimeTools.layerEmpty`)"
      )
      assert.notInclude(message, "SessionStore (")
      assert.include(message, "`SqlRuntime.layerSqlite()`")
    }))
})

describe("a permission policy checked against the agent's tools when a session starts", () => {
  const runtime = LocalTransport.layerMemory({ connectors: [Connectors.demoMailbox()] }).pipe(
    Layer.provide(ScriptedModel.layer([]))
  )
  const withPolicy = (
    rules: ReadonlyArray<PermissionPolicy.PermissionRule>,
    options: Partial<Agent.CommonOptions> = {}
  ) =>
    Agent.make({
      name: "assistant",
      model: "m",
      instructions: "Use your tools.",
      tools: [getLocation],
      permissions: new PermissionPolicy.PermissionPolicy({ default: "allow", rules }),
      ...options
    })

  it.effect("a rule naming a tool the agent cannot call (a typo) is PolicyInvalid, with the closest tool id", () =>
    Effect.gen(function*() {
      const agent = withPolicy([PermissionPolicy.rule("client.get_locaton", "deny")])
      const error = yield* Effect.flip(Agent.run(agent, "Where am I?"))
      assert.strictEqual(error._tag, "PolicyInvalid")
      assert.include(
        error.message,
        "rules[0].tools[0] \"client.get_locaton\" matches no tool agent \"assistant\" can call; did you mean client.get_location?"
      )
      const far = yield* Effect.flip(Agent.run(withPolicy([PermissionPolicy.rule("client.send_email", "deny")]), "Hi"))
      assert.include(
        far.message,
        "\"client.send_email\" matches no tool agent \"assistant\" can call (its tools: client.get_location)"
      )
    }).pipe(Effect.provide(runtime)))

  it.effect("a rule without the namespace is PolicyInvalid, with the closest tool id the agent can call", () =>
    Effect.gen(function*() {
      const bare = yield* Effect.flip(Agent.run(withPolicy([PermissionPolicy.rule("get_location", "deny")]), "Hi"))
      assert.strictEqual(bare._tag, "PolicyInvalid")
      assert.include(bare.message, "rules[0].tools[0] \"get_location\": no namespace")
      assert.include(bare.message, "did you mean client.get_location?")
      const mail = withPolicy([PermissionPolicy.rule("latest_email", "deny")], { connectors: ["gmail"] })
      const connector = yield* Effect.flip(Agent.run(mail, "Hi"))
      assert.include(connector.message, "did you mean connector.gmail.latest_email?")
    }).pipe(Effect.provide(runtime)))

  it.effect("rules naming a subagent's tool, a builtin, a declared connector's tool, or a wildcard matching one pass", () =>
    Effect.gen(function*() {
      const researcher = Agent.make({ name: "researcher", model: "m", instructions: "Research.", tools: [getLocation] })
      const parent = withPolicy([
        PermissionPolicy.rule(["client.get_location", "agents.spawn", "connector.gmail.latest_email"], "allow"),
        PermissionPolicy.rule(["client.get_*", "connector.gmail.*", "agents.*"], "deny")
      ], { tools: [], subagents: [researcher], connectors: ["gmail"] })
      const session = yield* Agent.startSession(parent)
      assert.isString(session.id)
    }).pipe(Effect.provide(runtime)))

  it.effect("a wildcard matching no tool the agent can call is PolicyInvalid, with the closest pattern", () =>
    Effect.gen(function*() {
      const typo = withPolicy([PermissionPolicy.rule("connector.gmial.*", "deny")], { connectors: ["gmail"] })
      const error = yield* Effect.flip(Agent.startSession(typo))
      assert.strictEqual(error._tag, "PolicyInvalid")
      assert.include(
        error.message,
        "rules[0].tools[0] \"connector.gmial.*\" matches no tool agent \"assistant\" can call; did you mean " +
          "connector.gmail.* (connector.gmail.latest_email)?"
      )
      // no subagents: no agents.* builtins to match
      const alone = yield* Effect.flip(Agent.startSession(withPolicy([PermissionPolicy.rule("agents.*", "ask")])))
      assert.include(
        alone.message,
        "\"agents.*\" matches no tool agent \"assistant\" can call (its tools: client.get_location)"
      )
    }).pipe(Effect.provide(runtime)))

  it.effect("a condition on a field the tool does not have, or of the wrong type, is PolicyInvalid naming the closest field", () =>
    Effect.gen(function*() {
      const sendEmail = ClientTool.make("send_email", {
        description: "Sends an email.",
        parameters: { to: Schema.String, body: Schema.String, priority: Schema.Number },
        success: Schema.Struct({ sent: Schema.Boolean })
      })
      const mailer = (when: ReadonlyArray<ArgumentCondition.ArgumentCondition>) =>
        withPolicy([PermissionPolicy.rule("client.send_email", "allow", { when })], { tools: [sendEmail] })
      const unknown = yield* Effect.flip(Agent.startSession(mailer([ArgumentCondition.glob("/too", "*@corp.com")])))
      assert.strictEqual(unknown._tag, "PolicyInvalid")
      assert.include(
        unknown.message,
        "rules[0].when[0] (client.send_email) /too: no field \"too\" in the arguments; did you mean /to?"
      )
      const mismatch = yield* Effect.flip(Agent.startSession(mailer([ArgumentCondition.glob("/priority", "1*")])))
      assert.include(mismatch.message, "/priority is number, and a Glob matches strings")
      const fine = yield* Agent.startSession(mailer([ArgumentCondition.glob("/to", "*@corp.com")]))
      assert.isString(fine.id)
    }).pipe(Effect.provide(runtime)))

  it.effect("under a connector whose tools are not known yet, an exact pattern is logged, not refused", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const capture = Logger.layer([Logger.make(({ message }) => logs.push(String(message)))])
      const agent = withPolicy([PermissionPolicy.rule("connector.drive.search", "deny")], { connectors: ["drive"] })
      const drive = LocalTransport.layerMemory({ connectors: [Connectors.make("drive", [])] }).pipe(
        Layer.provide(ScriptedModel.layer([]))
      )
      const session = yield* Agent.startSession(agent).pipe(Effect.provide(drive), Effect.provide(capture))
      assert.isString(session.id)
      assert.isTrue(
        logs.some((line) =>
          line.includes("\"connector.drive.search\": the tools of connector drive are not known yet")
        ),
        logs.join("\n")
      )
    }))

  it.effect("a rule naming a builtin the agent does not get (it has no subagents) is refused too", () =>
    Effect.gen(function*() {
      const wrong = withPolicy([PermissionPolicy.rule("agents.spawn", "ask")]) // no subagents: no agents.spawn
      const error = yield* Effect.flip(Agent.startSession(wrong))
      assert.strictEqual(error._tag, "PolicyInvalid")
    }).pipe(Effect.provide(runtime)))
})
