/**
 * What approvers ask for, end to end on the engine: edited arguments and remembered grants (issue 20). The rules
 * themselves are in `decide/Edits.test.ts` and `decide/Grants.test.ts`; here real turns run the tool and call the model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Principal, Session, Turn, type TurnEvent } from "@parley/core"
import { LocalTransport } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Effect, Layer, Schema, Stream } from "effect"

/** A mailer whose `send_email` the runtime runs, and the emails it sent (one ledger per test: tests run at once). */
const makeMailer = () => {
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
  return { sent, sendEmail, mailer }
}

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

describe("edited arguments", () => {
  const { mailer, sendEmail, sent } = makeMailer()
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
      const events = yield* Stream.runCollect(Turn.events(turn))
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

describe("remembered grants", () => {
  const { mailer, sendEmail, sent } = makeMailer()
  const mail = (to: string) => ScriptedModel.toolCall("send_email", { to, body: "Hi." })
  const Runtime = LocalTransport.layerMemory({ tools: [sendEmail] }).pipe(Layer.provideMerge(ScriptedModel.layer([
    mail("a@x.io"),
    ScriptedModel.text("Sent."),
    mail("b@x.io"),
    ScriptedModel.text("Sent again."),
    mail("c@x.io"),
    mail("d@x.io")
  ])))

  it.effect("a session grant skips the next approval in its session, not in another; revoking it asks again", () =>
    Effect.gen(function*() {
      const session = yield* Agent.startSession(mailer)
      const first = yield* Session.run(session, "Mail a.")
      if (first._tag !== "Blocked") return assert.fail(`the turn is ${first._tag}`)
      const turn = yield* Session.turn(session, first.turnId)
      yield* Turn.answer(turn, first.callbacks[0].id, new Answer.AllowApproval({ remember: "session" }), {
        label: "alice"
      })
      assert.strictEqual((yield* Turn.result(turn, { after: first }))._tag, "Completed")
      const grants = yield* Session.grants(session)
      assert.deepStrictEqual(grants.map((grant) => [grant.toolPattern, grant.decision, grant.scope]), [
        ["client.send_email", "allow", "session"]
      ])
      assert.deepStrictEqual(grants[0].grantedBy, new Principal.Client({ label: "alice" }))

      // The next call of the tool in this session: no callback waits, the grant answered it (no handler was asked).
      let asked = 0
      const second = yield* Session.run(session, "Mail b.").pipe(
        Effect.provide(
          CallbackHandler.layer({
            approval: () => Effect.sync(() => asked++).pipe(Effect.as(new Answer.KeepCallbackOpen()))
          })
        )
      )
      assert.strictEqual(asked, 0)
      assert.strictEqual(second._tag, "Completed")
      assert.deepStrictEqual(sent, [{ to: "a@x.io", body: "Hi." }, { to: "b@x.io", body: "Hi." }])
      const events = yield* Stream.runCollect(Turn.events(yield* Session.turn(session, second.turnId)))
      assert.deepStrictEqual(
        ofTag(events, "CallbackResolved").map((event) => event.answeredBy),
        [new Principal.Grant({ id: grants[0].grantId })]
      )

      // Another session of the same agent asks.
      const other = yield* Agent.startSession(mailer)
      assert.strictEqual((yield* Session.run(other, "Mail c."))._tag, "Blocked")
      assert.deepStrictEqual(yield* Session.grants(other), [])

      // Revoked: the session asks again.
      yield* Session.revokeGrant(session, grants[0].grantId, { label: "ops" })
      assert.deepStrictEqual(yield* Session.grants(session), [])
      const again = yield* Effect.flip(Session.revokeGrant(session, grants[0].grantId))
      assert.strictEqual(again._tag, "GrantNotFound")
      assert.strictEqual((yield* Session.run(session, "Mail d."))._tag, "Blocked")
      assert.strictEqual(sent.length, 2)
    }).pipe(Effect.provide(Runtime)))
})
