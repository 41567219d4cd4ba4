/**
 * Who decided each callback: every `CallbackResolved` for an answer names it (`answeredBy`), read from the log.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Inbox, Permissions, Principal, Session, Turn, TurnEvent } from "@parley/core"
import { LocalTransport } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, Tool, ToolAnnotations } from "@parley/tools"
import { Effect, Layer, Schema, Stream } from "effect"

const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  success: Schema.Struct({ city: Schema.String, country: Schema.String }),
  annotations: ToolAnnotations.readOnly
})

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String }),
  handlerName: "lookupPrice"
}, () => ({ price: "1,200 EUR" }))

const lookupStock = Tool.make("lookup_stock", {
  description: "Stock of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ count: Schema.Number })
}, () => ({ count: 3 }))

const assistant = Agent.make({
  name: "assistant",
  model: "m",
  instructions: "Use your tools.",
  tools: [getLocation, lookupPrice, lookupStock],
  permissionMode: "ask"
})

const answerLocation = {
  clientTool: ClientTool.answers(getLocation.answer(() => ({ city: "Lyon", country: "France" })))
}

/** The `answeredBy` of each answered callback of the turn, as `<tool id>/<callback kind>: <principal>`. */
const answeredBy = (turn: Turn.Turn) =>
  Turn.events(turn).pipe(
    Stream.runCollect,
    Effect.map((events) => {
      const opened = new Map<string, string>()
      const lines: Array<string> = []
      for (const event of events) {
        if (event._tag === "CallbackOpened" && event.callback._tag !== "OpenSignIn") {
          opened.set(event.callback.id, `${event.callback.request.tool.id}/${event.callback.kind}`)
        }
        if (event._tag === "CallbackResolved" && event.resolution === "answered") {
          const by: Principal.Principal | undefined = event.answeredBy
          lines.push(`${opened.get(event.callbackId)}: ${by === undefined ? "none" : JSON.stringify(by)}`)
        }
      }
      return lines
    })
  )

const runtime = (steps: ReadonlyArray<ScriptedModel.Step>) =>
  LocalTransport.layerMemory().pipe(Layer.provide(ScriptedModel.layer(steps)))

const turnOf = (state: { readonly sessionId: string; readonly turnId: string }) =>
  Effect.flatMap(Agent.session(assistant, state.sessionId), (session) => Session.turn(session, state.turnId as never))

describe("answeredBy", () => {
  it.effect("names the handler that answered: the record's name, the layer's, a named wrapper's, a tool's", () =>
    Effect.gen(function*() {
      const first = yield* Agent.run(assistant, "Where am I?").pipe(
        Effect.provide(CallbackHandler.layer([CallbackHandler.allowReadOnly, answerLocation], { name: "app" }))
      )
      assert.strictEqual(first._tag, "Completed")
      assert.deepStrictEqual(yield* answeredBy(yield* turnOf(first)), [
        "client.get_location/approval: {\"_tag\":\"Handler\",\"name\":\"allowReadOnly\"}",
        "client.get_location/client_tool: {\"_tag\":\"Handler\",\"name\":\"app\"}"
      ])
      // No names anywhere: "handler". A named wrapper renames what it wraps (allowTools has a name of its own).
      const second = yield* Agent.run(assistant, "Prices?").pipe(
        Effect.provide(CallbackHandler.layer([
          CallbackHandler.named("pricePolicy", CallbackHandler.allowTools(["client.lookup_price"])),
          { approval: () => new Answer.AllowApproval() }
        ]))
      )
      assert.strictEqual(second._tag, "Completed")
      assert.deepStrictEqual(yield* answeredBy(yield* turnOf(second)), [
        "client.lookup_price/approval: {\"_tag\":\"Handler\",\"name\":\"pricePolicy\"}",
        "client.lookup_stock/approval: {\"_tag\":\"Handler\",\"name\":\"handler\"}",
        "client.lookup_price/client_tool: {\"_tag\":\"Handler\",\"name\":\"lookupPrice\"}",
        "client.lookup_stock/client_tool: {\"_tag\":\"Handler\",\"name\":\"lookup_stock\"}"
      ])
    }).pipe(Effect.provide(runtime([
      ScriptedModel.toolCall("get_location", {}),
      ScriptedModel.text("Lyon."),
      ScriptedModel.reply({
        toolCalls: [
          { name: "lookup_price", params: { product: "Atlas" } },
          { name: "lookup_stock", params: { product: "Atlas" } }
        ]
      }),
      ScriptedModel.text("1,200 EUR, 3 left.")
    ]))))

  it.effect("names the client that answered by id, with the label it gave (Turn.answer, Inbox.answer)", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(assistant)
      const blocked = yield* Session.run(session, "Where am I?")
      assert.strictEqual(blocked._tag, "Blocked")
      if (blocked._tag !== "Blocked") return
      const turn = yield* Session.turn(session, blocked.turnId)
      yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval(), { label: "alice@example.com" })
      const open = yield* Turn.result(turn, { after: blocked })
      assert.strictEqual(open._tag, "Blocked")
      if (open._tag !== "Blocked") return
      yield* Inbox.answer(open.callbacks[0].id, Answer.ClientToolResult.success({ city: "Lyon", country: "France" }))
      const done = yield* Turn.result(turn, { after: open })
      assert.strictEqual(done._tag, "Completed")
      assert.deepStrictEqual(yield* answeredBy(turn), [
        "client.get_location/approval: {\"_tag\":\"Client\",\"label\":\"alice@example.com\"}",
        "client.get_location/client_tool: {\"_tag\":\"Client\"}"
      ])
      // The principal decodes from the log's wire form.
      const events = yield* Stream.runCollect(Turn.events(turn))
      const resolved = events.filter((event) => event._tag === "CallbackResolved")
      const decoded = resolved.map((event) =>
        Schema.decodeUnknownSync(TurnEvent.TurnEvent)(
          Schema.encodeSync(TurnEvent.TurnEvent)(event)
        )
      )
      assert.deepStrictEqual(decoded, resolved)
    }).pipe(Effect.provide(runtime([ScriptedModel.toolCall("get_location", {}), ScriptedModel.text("Lyon.")]))))

  it.effect("names the policy rule that allowed or denied a call without asking, on the call's ToolCallStarted", () =>
    Effect.gen(function*() {
      const governed = Agent.make({
        name: "governed",
        model: "m",
        instructions: "Use your tools.",
        tools: [lookupPrice, lookupStock, getLocation],
        permissions: new Permissions.PermissionPolicy({
          default: "deny",
          rules: [
            new Permissions.PermissionRule({ tools: ["client.lookup_*"], decision: "allow" }),
            new Permissions.PermissionRule({ tools: ["client.lookup_stock"], decision: "ask" })
          ]
        })
      })
      const session = yield* Agent.startSession(governed)
      // No handler at all: nothing asks, so the turn completes on the policy's word alone.
      const done = yield* Session.run(session, "Atlas?")
      assert.strictEqual(done._tag, "Completed")
      const events = yield* Stream.runCollect(Turn.events(yield* Session.turn(session, done.turnId)))
      const started = events.filter((event) => event._tag === "ToolCallStarted")
      assert.deepStrictEqual(started.map((event) => ({ tool: event.toolId as string, by: event.decidedBy })), [
        { tool: "client.lookup_price", by: new Principal.Policy({ rule: "rules[0] client.lookup_*: allow" }) },
        { tool: "client.lookup_stock", by: new Principal.Policy({ rule: "rules[0] client.lookup_*: allow" }) },
        { tool: "client.get_location", by: new Principal.Policy({ rule: "default: deny" }) }
      ])
      assert.deepStrictEqual(started.map((event) => Principal.describe(event.decidedBy!)), [
        "policy rules[0] client.lookup_*: allow",
        "policy rules[0] client.lookup_*: allow",
        "policy default: deny"
      ])
      // No approval was asked for (the allowed client tools ran by their handlers), and the denied call was not made.
      assert.isFalse(events.some((event) => event._tag === "CallbackOpened" && event.callback._tag === "OpenApproval"))
      const denied = events.find((event) =>
        event._tag === "ToolCallCompleted" && event.toolId === "client.get_location"
      )
      assert.isTrue(denied?._tag === "ToolCallCompleted" && denied.isFailure)
      // The verdict survives the log's wire form.
      assert.deepStrictEqual(
        started.map((event) =>
          Schema.decodeUnknownSync(TurnEvent.TurnEvent)(Schema.encodeSync(TurnEvent.TurnEvent)(event))
        ),
        started
      )
    }).pipe(Effect.provide(runtime([
      ScriptedModel.reply({
        toolCalls: [
          { name: "lookup_price", params: { product: "Atlas" } },
          { name: "lookup_stock", params: { product: "Atlas" } },
          { name: "get_location", params: {} }
        ]
      }),
      ScriptedModel.text("1,200 EUR, 3 left; I may not see where you are.")
    ]))))
})
