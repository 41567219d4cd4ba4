/**
 * The server owns the agents it serves (issue 35, point 1), over HTTP against a real server on 127.0.0.1: a client
 * that posts a served agent with its policy switched off still gets the server's approvals; a client can narrow a
 * served agent's policy, never widen it; a definition the server does not serve is refused unless the server accepts
 * its tenants' definitions, and then it runs under the server's policy floor.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Transport } from "@parley/core"
import type { Callback } from "@parley/core"
import { PermissionPolicy } from "@parley/policy"
import type { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { brain, getLocation, locator } from "./fixtures/agents.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** The served `locator` asks before `get_location`; `openLocator` does not. */
const openLocator = Agent.make({
  name: "open-locator",
  model: "scripted",
  instructions: "Say where the user is.",
  tools: [getLocation],
  permissionMode: "allow"
})

/** A client's own definition of an agent, `locator`'s tools under the policy `permissionMode`. */
const clientAgent = (name: string, permissionMode: "allow" | "ask" | "deny") =>
  Agent.make({ name, model: "scripted", instructions: "Say where the user is.", tools: [getLocation], permissionMode })

const serve = (server: Partial<ParleyServer.Options>) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    const database = sqliteDatabase(yield* sqliteFile)
    // The server's own default (the fixture turns acceptDefinitions on for the transport contract), unless given.
    return yield* startServer(database, model.languageModel, {
      runtimeTools: [],
      server: { acceptDefinitions: undefined, ...server }
    })
  })

/** Runs `agent` over HTTP, allowing every approval and answering the tool: the approvals it was asked. */
const runRecording = (url: string, agent: Agent.Agent) =>
  Effect.gen(function*() {
    const asked: Array<Callback.ApprovalRequest> = []
    const handlers = CallbackHandler.layer({
      approval: (_context, request) => {
        asked.push(request)
        return new Answer.AllowApproval()
      },
      clientTool: () => Answer.ClientToolResult.success({ city: "Lyon" })
    })
    const state = yield* Agent.run(agent, "Where am I?").pipe(
      Effect.provide(handlers),
      Effect.provide(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) }))
    )
    return { state, asked }
  })

const postSession = (url: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.alice}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return { status: response.status, body: await response.json() as Record<string, unknown> }
  })

describe("the server owns the agents it serves", () => {
  it.effect(
    "a served agent posted with its policy switched off still asks, as the server's definition says",
    () =>
      Effect.gen(function*() {
        const url = yield* serve({ agents: [locator.spec] })
        // The client's copy of `locator` says "allow everything".
        const { asked, state } = yield* runRecording(url, clientAgent("locator", "allow"))
        assert.isTrue(state._tag === "Completed" && state.text === "You are in Lyon.")
        assert.strictEqual(asked.length, 1)
        assert.strictEqual(asked[0].tool.id, "client.get_location")
        assert.deepStrictEqual(asked[0].decidedBy, new PermissionPolicy.DefaultDecision({}))
        // The raw request: the same, whatever the body's policy says.
        const created = yield* postSession(url, { name: "locator", permissions: { default: "allow" } })
        assert.strictEqual(created.status, 201)
      }),
    60_000
  )

  it.effect(
    "a client narrows a served agent's policy: its ask stands over the server's allow, named as the client's",
    () =>
      Effect.gen(function*() {
        const url = yield* serve({ agents: [openLocator.spec] })
        const wide = yield* runRecording(url, openLocator)
        assert.strictEqual(wide.asked.length, 0)
        const narrowed = yield* runRecording(url, clientAgent("open-locator", "ask"))
        assert.isTrue(narrowed.state._tag === "Completed")
        assert.strictEqual(narrowed.asked.length, 1)
        assert.deepStrictEqual(narrowed.asked[0].decidedBy, new PermissionPolicy.DefaultDecision({ bound: "client" }))
        // A client's deny refuses the call: the model gets the refusal, no approval is asked.
        const refused = yield* runRecording(url, clientAgent("open-locator", "deny"))
        assert.strictEqual(refused.asked.length, 0)
      }),
    60_000
  )

  it.effect(
    "a definition the server does not serve is refused, naming the served agents and the closest name",
    () =>
      Effect.gen(function*() {
        const url = yield* serve({ agents: [locator.spec, openLocator.spec] })
        const typo = yield* postSession(url, { name: "locatr", permissions: { default: "allow" } })
        assert.strictEqual(typo.status, 400)
        assert.strictEqual(typo.body._tag, "AgentInvalid")
        assert.deepStrictEqual(typo.body.issues, [
          "this server runs only the agents it serves (locator, open-locator), not definitions of its callers: " +
          "did you mean locator?"
        ])
        // Through the transport: the typed error; neither refusal made a session.
        const error = yield* Effect.flip(runRecording(url, clientAgent("mine", "allow")))
        assert.strictEqual(error._tag, "AgentInvalid")
        const listed = yield* Effect.promise(() =>
          fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${keys.alice}` } }).then((r) => r.json())
        )
        assert.strictEqual((listed as { sessions: Array<{ agent: string }> }).sessions.length, 0)
        const none = yield* serve({})
        const noAgents = yield* postSession(none, { name: "mine" })
        assert.strictEqual(noAgents.status, 400)
        assert.deepStrictEqual(noAgents.body.issues, [
          "this server serves no agents and runs no definitions of its callers"
        ])
      }),
    60_000
  )

  it.effect(
    "accepted definitions run under the server's floor: a tenant's allow-all still asks what the floor asks",
    () =>
      Effect.gen(function*() {
        const policyFloor = new PermissionPolicy.PermissionPolicy({
          default: "allow",
          rules: [PermissionPolicy.rule("client.get_*", "ask")]
        })
        const url = yield* serve({ acceptDefinitions: true, policyFloor })
        const { asked, state } = yield* runRecording(url, clientAgent("mine", "allow"))
        assert.isTrue(state._tag === "Completed")
        assert.strictEqual(asked.length, 1)
        const decidedBy = asked[0].decidedBy
        assert.isTrue(
          decidedBy._tag === "RuleMatched" && decidedBy.bound === "server" && decidedBy.pattern === "client.get_*"
        )
        // The floor bounds served agents too.
        const both = yield* serve({ agents: [openLocator.spec], policyFloor })
        assert.strictEqual((yield* runRecording(both, openLocator)).asked.length, 1)
      }),
    60_000
  )
})

describe("an Agent posted whole, not its .spec", () => {
  it.effect("is a typed 400 naming `spec` (over plain HTTP and through HttpTransport), never a 500", () =>
    Effect.gen(function*() {
      const url = yield* serve({ agents: [locator.spec] })
      const reply = yield* postSession(url, JSON.parse(JSON.stringify(locator)))
      assert.strictEqual(reply.status, 400)
      assert.strictEqual(reply.body._tag, "HttpApiDecodeError")
      assert.deepStrictEqual(reply.body.issues, [{ path: ["spec"], message: "Expected no excess property" }])
      const viaTransport = yield* Effect.flip(
        Effect.flatMap(Transport.Transport, (transport) => transport.createSession(locator as never)).pipe(
          Effect.provide(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) }))
        )
      )
      assert.strictEqual(viaTransport._tag, "TransportFailure")
      assert.include(viaTransport.message, "spec")
    }))
})
