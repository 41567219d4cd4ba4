import { assert, describe, it } from "@effect/vitest"
import { Agent, CallbackHandler, Permissions, Session } from "@parley/core"
import { McpConnector } from "@parley/mcp"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer } from "effect"
import { engine, eventually, stdioMail, within } from "./fixtures.js"
import { serveMail } from "./servers/http.js"
import { addTool } from "./servers/mail.js"

// An agent given an MCP server's tools through the engine: the model sees them, calls them through the permission
// policy and the handlers, and reads their results.

const assistant = (options?: Partial<Parameters<typeof Agent.make>[0]>) =>
  Agent.make(
    {
      name: "mail-assistant",
      model: "scripted",
      instructions: "Answer from the user's mail.",
      connectors: ["mail"],
      ...options
    } as Parameters<typeof Agent.make>[0]
  )

/** The model calls each of `calls` in turn, then says what the last result was. */
const brain = (calls: ReadonlyArray<readonly [string, unknown]>) => (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  const next = calls[results.length]
  if (next !== undefined) return ScriptedModel.toolCall(next[0], next[1])
  const last = results[results.length - 1]
  return ScriptedModel.text(`${last?.isFailure ? "failed" : "ok"}: ${JSON.stringify(last?.result)}`)
}

describe("MCP tools in the engine", () => {
  it.live("the model sees the server's tools and reads a call's result", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction(brain([["mail_list_messages", { limit: 1 }]]))
      const state = yield* within("Agent.run", Agent.run(assistant(), "What is my latest email about?")).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
        Effect.provide(engine([connector], model))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.include(state.text, "ok: {\"messages\":[{\"from\":\"Camille Martin")
      const calls = yield* model.calls
      assert.deepStrictEqual(ScriptedModel.toolNames(calls[0]), [
        "mail_list_messages",
        "mail_send_message",
        "mail_wait_forever",
        "mail_crash"
      ])
      // No sign-in was asked: the server needs none.
      assert.deepStrictEqual(mail.seen.calls, [{ tool: "list_messages", args: { limit: 1 } }])
    })))

  it.live("allowReadOnly allows the read-only tool and leaves the destructive one to a person", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction(brain([
        ["mail_list_messages", {}],
        ["mail_send_message", { to: "camille@example.com", body: "Yes, 8 is fine." }]
      ]))
      const state = yield* within("Agent.run", Agent.run(assistant({ permissionMode: "ask" }), "Answer Camille")).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.allowReadOnly)),
        Effect.provide(engine([connector], model))
      )
      assert.strictEqual(state._tag, "Blocked")
      if (state._tag !== "Blocked") return
      const [open] = state.callbacks
      assert.strictEqual(open._tag, "OpenApproval")
      if (open._tag === "OpenApproval") {
        assert.strictEqual(open.request.tool.id, "connector.mail.send_message")
        assert.isTrue(open.request.tool.annotations.destructiveHint)
      }
      // The read ran; the send waits.
      assert.deepStrictEqual(mail.seen.calls.map((call) => call.tool), ["list_messages"])
      assert.deepStrictEqual(mail.seen.sent, [])
    })))

  it.live("a policy that denies connector.mail.send_message stops the call before the server sees it", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction(brain([["mail_send_message", { to: "a@b.c", body: "x" }]]))
      const permissions = new Permissions.PermissionPolicy({
        default: "allow",
        rules: [new Permissions.PermissionRule({ tools: ["connector.mail.send_message"], decision: "deny" })]
      })
      const state = yield* within("Agent.run", Agent.run(assistant({ permissions }), "Send it")).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
        Effect.provide(engine([connector], model))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") {
        assert.include(state.text, "The permission policy denies connector.mail.send_message")
      }
      assert.deepStrictEqual(mail.seen.calls, [])
    })))

  it.live("a server that dies mid-call gives the model a tool error, and the turn goes on", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction(brain([["mail_crash", {}]]))
      const state = yield* within("Agent.run", Agent.run(assistant(), "Crash it"), 5).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
        Effect.provide(engine([connector], model))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.include(state.text, "failed: \"The mail server could not run crash")
    })))

  it.live("a cancelled turn sends notifications/cancelled to the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction(brain([["mail_wait_forever", {}]]))
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant())
        yield* Session.sendMessage(session, "Wait")
        yield* eventually("the server got the call", () => mail.seen.calls.some((call) => call.tool === "wait_forever"))
        yield* Session.cancel(session)
        yield* eventually("the server saw the cancellation", () => mail.seen.cancelled.length === 1)
      }).pipe(Effect.provide(engine([connector], model)))
    })))

  it.live("list_changed: the new tool is offered at the next model step", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const model = yield* ScriptedModel.fromFunction((call) =>
        ScriptedModel.toolNames(call).includes("mail_archive_message")
          ? ScriptedModel.text("I can archive now.")
          : ScriptedModel.text("I cannot archive.")
      )
      const texts = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(assistant())
        const first = yield* within("first turn", Session.run(session, "Can you archive?"))
        for (const server of mail.servers) addTool(server)
        yield* eventually("the tool list was read again", () => connector.tools.length === 5)
        const second = yield* within("second turn", Session.run(session, "And now?"))
        return [first, second].map((state) => (state._tag === "Completed" ? state.text : state._tag))
      }).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
        Effect.provide(engine([connector], model))
      )
      assert.deepStrictEqual(texts, ["I cannot archive.", "I can archive now."])
    })))

  it.live("Connectors.layerEffect connects when the layer is built; an unreachable server fails the layer", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain([["mail_list_messages", { limit: 2 }]]))
      const runtime = (url: string) =>
        LocalTransport.layer.pipe(
          Layer.provide([
            SessionStore.layerMemory,
            Connectors.layerEffect([Connectors.demoMailbox(), McpConnector.http({ source: "mail", url })]),
            RuntimeTools.layerEmpty,
            Models.layer(Models.single(model.languageModel))
          ])
        )
      const state = yield* Effect.scoped(Effect.gen(function*() {
        const mail = yield* serveMail
        return yield* within("Agent.run", Agent.run(assistant(), "Latest?")).pipe(
          Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
          Effect.provide(runtime(mail.url))
        )
      }))
      assert.strictEqual(state._tag, "Completed")
      const error = yield* Effect.flip(
        Agent.run(assistant(), "Latest?").pipe(Effect.provide(runtime("http://127.0.0.1:9/mcp")))
      )
      assert.strictEqual(error._tag, "McpConnectError")
    }))

  it.live("a stdio server's tool runs in a turn", () =>
    Effect.scoped(Effect.gen(function*() {
      const connector = yield* McpConnector.stdio(stdioMail)
      const model = yield* ScriptedModel.fromFunction(
        brain([["mail_send_message", { to: "camille@example.com", body: "Hi" }]])
      )
      const state = yield* within("Agent.run", Agent.run(assistant(), "Say hi to Camille")).pipe(
        Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns)),
        Effect.provide(engine([connector], model))
      )
      assert.strictEqual(state._tag, "Completed")
      if (state._tag === "Completed") assert.strictEqual(state.text, "ok: \"Sent to camille@example.com.\"")
    })), 20_000)
})
