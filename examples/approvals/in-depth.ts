/**
 * Approvals in depth (docs/guides/approvals-in-depth.md), offline: a person approves with a change ("to the team,
 * not to everyone"), remembers the approval for the session, the next call goes through without asking, and the log
 * says who decided each call. Then the grant is revoked and the tool asks again.
 *
 * Run it: `npx tsx --conditions=@parley/source examples/approvals/in-depth.ts`
 */
import { Agent, Answer, Principal, Session, Turn, type TurnEvent } from "@parley/core"
import { LocalTransport } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Console, Effect, Layer, Schema, Stream } from "effect"
import { isEntry } from "../shared/entry.js"

/** A tool the runtime runs; the policy asks before each call. */
const sendEmail = Tool.make("send_email", {
  description: "Sends an email.",
  parameters: { to: Schema.String, body: Schema.String },
  success: Schema.Struct({ sent: Schema.Boolean })
}, ({ to }) => Console.log(`(the tool sends to ${to})`).pipe(Effect.as({ sent: true })))

const mailer = Agent.make({
  name: "mailer",
  model: "mistral-large-latest",
  instructions: "Send what you are asked to send.",
  tools: [sendEmail.spec],
  permissionMode: "ask"
})

/** Ids are random and change with every run: the guide prints a grant's id without its random part. */
const masked = (line: string) => line.replace(/\bgrant_[A-Za-z0-9_-]+/g, "grant_…")

/** Who decided each approval of the turn, read from its log. */
const audit = (turn: Turn.Turn) =>
  Effect.gen(function*() {
    const events = yield* Stream.runCollect(Turn.events(turn))
    for (const event of events) {
      if (event._tag !== "CallbackResolved" || event.answer?._tag !== "AllowApproval") continue
      const call = events.find((e): e is TurnEvent.ToolCallStarted => e._tag === "ToolCallStarted")
      const by = event.answeredBy === undefined ? "nobody recorded" : Principal.describe(event.answeredBy)
      const edited = event.answer.arguments === undefined ? "" : ` with ${JSON.stringify(event.answer.arguments)}`
      yield* Console.log(masked(`audit: ${call?.toolId} ${JSON.stringify(call?.arguments)} allowed by ${by}${edited}`))
    }
  })

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(mailer)
  const first = yield* Session.run(session, "Tell everyone lunch is at noon.")
  if (first._tag !== "Blocked") return yield* Effect.die(new Error(`expected Blocked, got ${first._tag}`))
  const turn = yield* Session.turn(session, first.turnId)
  // Approve with a change, and remember it for this session.
  const edit = new Answer.AllowApproval({
    arguments: { to: "team@example.com", body: "Lunch at noon." },
    remember: "session"
  })
  yield* Turn.answer(turn, first.callbacks[0].id, edit, { label: "alice" })
  yield* Console.log(`first turn: ${(yield* Turn.result(turn, { after: first }))._tag}`)
  yield* audit(turn)

  // The next call of send_email in this session is decided by the grant: nothing waits.
  const second = yield* Session.run(session, "Tell the team the room changed.")
  yield* Console.log(`second turn: ${second._tag}`)
  yield* audit(yield* Session.turn(session, second.turnId))
  const [grant] = yield* Session.grants(session)
  yield* Console.log(masked(
    `grants: ${grant.grantId} ${grant.decision}s ${grant.toolPattern} (${grant.scope}), granted ${
      Principal.describe(grant.grantedBy)
    }`
  ))

  // Revoked: the tool asks again.
  yield* Session.revokeGrant(session, grant.grantId, { label: "ops" })
  const third = yield* Session.run(session, "And tell them about Friday.")
  yield* Console.log(`third turn: ${third._tag === "Blocked" ? `Blocked on ${third.callbacks[0].kind}` : third._tag}`)
})

export const Runtime = LocalTransport.layerMemory({ tools: [sendEmail] }).pipe(
  Layer.provide(ScriptedModel.layer([
    ScriptedModel.toolCall("send_email", { to: "everyone@example.com", body: "Lunch at noon." }),
    ScriptedModel.text("Sent to the team."),
    ScriptedModel.toolCall("send_email", { to: "team@example.com", body: "The room changed." }),
    ScriptedModel.text("Told the team."),
    ScriptedModel.toolCall("send_email", { to: "team@example.com", body: "Friday." })
  ]))
)

if (isEntry(import.meta.url)) Effect.runPromise(program.pipe(Effect.provide(Runtime)))
