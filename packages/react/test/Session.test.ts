/**
 * What the hooks build from events, on the events of a real run (the in-memory runtime, a scripted brain): `addEvents`
 * keeps each stored event once and in order whatever arrives twice, and joins deltas into their message's text until
 * it completes; `turnsOf` tells the turn (its input, its items in order, its state) and says "answered here" of the
 * answer that won with a request id sent from this client only. And a hook outside a `Provider` says what is missing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Answer, Transport as TransportModule, TurnEvent } from "@parley/core"
import type { Transport } from "@parley/core"
import { ParleyClient, Session } from "@parley/react"
import { LocalTransport, Models } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Context, DateTime, Effect, Layer, Schedule, Stream } from "effect"
import { createElement } from "react"
import { renderToString } from "react-dom/server"
import * as Fixture from "./fixtures/server.js"

const waitOpen = (transport: Transport.Service, kind: "approval" | "client_tool") =>
  transport.listOpen().pipe(
    Effect.map((open) => open.find((entry) => entry.callback.kind === kind)),
    Effect.flatMap((found) => (found === undefined ? Effect.fail("not yet" as const) : Effect.succeed(found))),
    Effect.retry({ times: 300, schedule: Schedule.spaced("10 millis") }),
    Effect.orDie
  )

/** A turn of the locator run in memory: the approval answered with request id `mine`, the tool's with `theirs`. */
const run = Effect.gen(function*() {
  const scripted = yield* ScriptedModel.fromFunction((call) =>
    ScriptedModel.toolResults(call).length === 0
      ? ScriptedModel.toolCall("get_location", {})
      : ScriptedModel.text("You are in Lyon.")
  )
  const context = yield* Layer.build(LocalTransport.layerMemory({ models: Models.single(scripted.languageModel) }))
  const transport = Context.get(context, TransportModule.Transport)
  const session = yield* transport.createSession(Fixture.locator.spec)
  yield* transport.sendMessage(session.sessionId, "Where am I?")
  const approval = yield* waitOpen(transport, "approval")
  yield* transport.answer({
    sessionId: session.sessionId,
    turnId: approval.callback.turnId,
    callbackId: approval.callback.id,
    answer: new Answer.AllowApproval(),
    requestId: "mine"
  })
  const tool = yield* waitOpen(transport, "client_tool")
  yield* transport.answer({
    sessionId: session.sessionId,
    turnId: tool.callback.turnId,
    callbackId: tool.callback.id,
    answer: Answer.ClientToolResult.success({ city: "Lyon" }),
    requestId: "theirs"
  })
  const events = yield* transport.events(session.sessionId, 0).pipe(
    Stream.filter((event) => event._tag !== "MessageDelta"),
    Stream.takeUntil((event) => event._tag === "TurnEnded"),
    Stream.runCollect
  )
  return { events: Array.from(events), approval: approval.callback, tool: tool.callback }
}).pipe(Effect.orDie)

const empty: Session.Events = { events: [], streaming: new Map(), status: "live", error: undefined }

describe("Session", () => {
  it.live("addEvents: each stored event once and in order, whatever arrives twice", () =>
    Effect.gen(function*() {
      const { events } = yield* run
      const half = Math.floor(events.length / 2)
      // A stream read twice over its first half (a second mount, a resumed connection sent the same events again).
      const state = [events.slice(0, half), events.slice(0, half + 1), events.slice(half - 2)].reduce(
        (state, arrived) => Session.addEvents(state, arrived),
        empty
      )
      assert.deepStrictEqual(state.events.map((event) => event.seq), events.map((event) => event.seq))
      assert.strictEqual(Session.addEvents(state, events), state, "nothing new: the same state")
    }))

  it.effect("addEvents: deltas join into their message's text until it completes", () =>
    Effect.sync(() => {
      const common = { sessionId: "ses_1" as never, turnId: "turn_1" as never, at: DateTime.makeUnsafe(0) }
      const step = new TurnEvent.ModelStepStarted({ ...common, seq: 3, messageId: "msg_3", step: 0 })
      const delta = (text: string) => new TurnEvent.MessageDelta({ ...common, seq: 3, messageId: "msg_3", delta: text })
      const streaming = Session.addEvents(empty, [step, delta("You are "), delta("in Lyon.")])
      assert.strictEqual(streaming.streaming.get("msg_3"), "You are in Lyon.")
      assert.deepStrictEqual(streaming.events.map((event) => event._tag), ["ModelStepStarted"], "deltas are not stored")
      const done = Session.addEvents(streaming, [
        new TurnEvent.MessageCompleted({ ...common, seq: 4, messageId: "msg_3", text: "You are in Lyon." })
      ])
      assert.isFalse(done.streaming.has("msg_3"))
      const [turn] = Session.turnsOf(
        [new TurnEvent.TurnQueued({ ...common, seq: 0, input: "Where am I?" }), ...streaming.events],
        { streaming: streaming.streaming }
      )
      assert.deepStrictEqual(turn.items, [
        { _tag: "Message", messageId: "msg_3", text: "You are in Lyon.", streaming: true }
      ])
    }))

  it.live("turnsOf: the turn's input, items in order, state; answered here only with a request id sent here", () =>
    Effect.gen(function*() {
      const { approval, events, tool } = yield* run
      const sentAnswers = new Map([[approval.id, "mine"], [tool.id, "mine too, but not the one that won"]])
      const [turn, ...others] = Session.turnsOf(events, { sentAnswers })
      assert.strictEqual(others.length, 0)
      assert.strictEqual(turn.input, "Where am I?")
      assert.strictEqual(turn.state, "completed")
      assert.strictEqual(turn.final?._tag, "Completed")
      assert.deepStrictEqual(
        turn.items.map((item) => item._tag === "Callback" ? `${item.callback.kind}:${item.answeredHere}` : item._tag),
        ["ToolCall", "approval:true", "client_tool:false", "Message"],
        "the call, its approval, the client tool's callback, the answer"
      )
      const call = turn.items.find((item) => item._tag === "ToolCall")
      assert.deepStrictEqual(call?._tag === "ToolCall" ? call.result : undefined, {
        isFailure: false,
        value: { city: "Lyon" }
      })
      const message = turn.items[turn.items.length - 1]
      assert.deepStrictEqual(message, {
        _tag: "Message",
        messageId: message._tag === "Message" ? message.messageId : "",
        text: "You are in Lyon.",
        streaming: false
      })
      const blocked = Session.turnsOf(events.slice(0, events.findIndex((event) => event._tag === "TurnBlocked") + 1))
      assert.strictEqual(blocked[0].state, "blocked")
    }))

  it("a hook outside a Provider says what is missing", () => {
    const Orphan = () => {
      Session.useEvents("ses_1")
      return null
    }
    assert.throws(
      () => renderToString(createElement(Orphan)),
      /no ParleyClient here: wrap the app in <ParleyClient\.Provider/
    )
    assert.isFunction(ParleyClient.Provider)
  })
})
