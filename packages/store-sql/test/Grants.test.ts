/**
 * A remembered grant is part of the tree's log: a new engine over the same SQLite file (a restart) decides by it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Principal, Session, Turn } from "@parley/core"
import { SqlRuntime } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Effect, Layer, Schema, Stream } from "effect"
import { sqliteFile } from "./databases.js"

describe("grants over SQLite", () => {
  it.effect("a tree grant made before a restart answers the next call after it", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const sent: Array<unknown> = []
      const sendEmail = Tool.make("send_email", {
        description: "Sends an email.",
        parameters: { to: Schema.String },
        success: Schema.Struct({ sent: Schema.Boolean })
      }, (params) => Effect.sync(() => sent.push(params)).pipe(Effect.as({ sent: true })))
      const mailer = Agent.make({
        name: "mailer",
        model: "m",
        instructions: "Send.",
        tools: [sendEmail.spec],
        permissionMode: "ask"
      })
      const engine = (steps: ReadonlyArray<ScriptedModel.Step>) =>
        SqlRuntime.layerSqlite({ filename, tools: [sendEmail] }).pipe(Layer.provide(ScriptedModel.layer(steps)))

      const sessionId = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(mailer)
        const blocked = yield* Session.run(session, "Mail a.")
        if (blocked._tag !== "Blocked") return assert.fail(`the turn is ${blocked._tag}`)
        const turn = yield* Session.turn(session, blocked.turnId)
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval({ remember: "tree" }))
        assert.strictEqual((yield* Turn.result(turn, { after: blocked }))._tag, "Completed")
        return session.id
      }).pipe(Effect.provide(engine([
        ScriptedModel.toolCall("send_email", { to: "a@x.io" }),
        ScriptedModel.text("Sent.")
      ])))

      // Another engine over the same file: the grant is in the log it loads.
      yield* Effect.gen(function*() {
        const session = yield* Agent.session(mailer, sessionId)
        const grants = yield* Session.grants(session)
        assert.deepStrictEqual(grants.map((grant) => [grant.toolPattern, grant.scope]), [["client.send_email", "tree"]])
        const state = yield* Session.run(session, "Mail b.")
        assert.strictEqual(state._tag, "Completed")
        const events = yield* Stream.runCollect(Turn.events(yield* Session.turn(session, state.turnId)))

        const resolved = events.flatMap((event) => event._tag === "CallbackResolved" ? [event.answeredBy] : [])
        assert.deepStrictEqual(resolved, [new Principal.Grant({ id: grants[0].grantId })])
      }).pipe(Effect.provide(engine([
        ScriptedModel.toolCall("send_email", { to: "b@x.io" }),
        ScriptedModel.text("Sent again.")
      ])))
      assert.deepStrictEqual(sent, [{ to: "a@x.io" }, { to: "b@x.io" }])
    }))
})
