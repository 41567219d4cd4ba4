/**
 * What approvers ask for, end to end on the engine: edited arguments (issue 20). The rules themselves are in
 * `decide/Edits.test.ts`; here a real turn runs the tool and calls the model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Turn, type TurnEvent } from "@parley/core"
import { LocalTransport } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"

const sent: Array<unknown> = []

const sendEmail = Tool.make("send_email", {
  description: "Sends an email.",
  parameters: { to: Schema.String, body: Schema.String },
  success: Schema.Struct({ sent: Schema.Boolean })
}, (params) => Effect.sync(() => sent.push(params)).pipe(Effect.as({ sent: true })))

const mailer = Agent.make({
  name: "mailer",
  model: "m",
  instructions: "Send what you are asked to send.",
  tools: [sendEmail.spec],
  permissionMode: "ask"
})

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

describe("edited arguments", () => {
  it.effect("a refused edit leaves the call open; an accepted one runs the tool with it, and the model sees it", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(mailer)
      const blocked = yield* Session.run(session, "Tell everyone about lunch.")
      assert.strictEqual(blocked._tag, "Blocked")
      if (blocked._tag !== "Blocked") return
      const turn = yield* Session.turn(session, blocked.turnId)
      const approval = blocked.callbacks[0]
      const refused = yield* Effect.flip(
        Turn.answer(turn, approval.id, new Answer.AllowApproval({ arguments: { to: ["team@x.io"] } }))
      )
      assert.strictEqual(refused._tag, "AnswerMismatch")
      assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((callback) => callback.id), [approval.id])

      const toTeam = { to: "team@x.io", body: "Lunch at noon." }
      yield* Turn.answer(turn, approval.id, new Answer.AllowApproval({ arguments: toTeam }), { label: "alice" })
      const done = yield* Turn.result(turn, { after: blocked })
      assert.strictEqual(done._tag, "Completed")
      assert.deepStrictEqual(sent, [toTeam])

      // The log keeps both: the model's arguments on the call, the approved ones on the answer.
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(Turn.events(turn)))
      assert.deepStrictEqual(ofTag(events, "ToolCallStarted")[0].arguments, { to: "all@x.io", body: "Lunch at noon." })
      const answer = ofTag(events, "CallbackResolved")[0].answer
      assert.deepStrictEqual(answer?._tag === "AllowApproval" ? answer.arguments : undefined, toTeam)
      // The model's next call shows the call as made with the approved arguments.
      const calls = yield* ScriptedModel.calls
      const toolCall = calls[1].prompt.content.flatMap((message) =>
        message.role === "assistant"
          ? message.content.filter((part) => part.type === "tool-call")
          : []
      )[0]
      assert.deepStrictEqual(toolCall?.type === "tool-call" ? toolCall.params : undefined, toTeam)
    }).pipe(Effect.provide(
      LocalTransport.layerMemory({ tools: [sendEmail] }).pipe(Layer.provideMerge(ScriptedModel.layer([
        ScriptedModel.toolCall("send_email", { to: "all@x.io", body: "Lunch at noon." }),
        ScriptedModel.text("Sent to the team.")
      ])))
    )))
})
