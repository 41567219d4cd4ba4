/**
 * Approval workflows (docs/guides/approval-workflows.md), offline: a rule on the call's arguments lets the agent
 * email colleagues (`/to` matches `*@corp.com`) and asks before it emails anyone else; a person answers one approval
 * with a grant scoped to a customer's domain, which answers the next email there and no other. First, the load-time
 * check refuses a policy whose condition names a field the tool does not have and whose wildcard matches no tool.
 *
 * Run it: `npx tsx --conditions=@parley/source examples/approval-workflows/conditions.ts`
 */
import { Agent, Answer, Principal, Session, Turn, type TurnEvent } from "@parley/core"
import { ArgumentCondition, PermissionPolicy } from "@parley/policy"
import { LocalTransport } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Console, Effect, Layer, Schema, Stream } from "effect"
import { isEntry } from "../shared/entry.js"

/** A tool the runtime runs; the policy decides on its `to`. */
const sendEmail = Tool.make("send_email", {
  description: "Sends an email.",
  parameters: { to: Schema.String, subject: Schema.String },
  success: Schema.Struct({ sent: Schema.Boolean })
}, ({ to }) => Console.log(`(the tool sends to ${to})`).pipe(Effect.as({ sent: true })))

/** Colleagues without asking; everyone else waits for a person (the default). */
const permissions = new PermissionPolicy.PermissionPolicy({
  default: "ask",
  rules: [
    PermissionPolicy.rule("client.send_email", "allow", { when: [ArgumentCondition.glob("/to", "*@corp.com")] })
  ]
})

const mailer = Agent.make({
  name: "mailer",
  model: "mistral-large-latest",
  instructions: "Send what you are asked to send.",
  tools: [sendEmail.spec],
  permissions
})

/** The same agent with two slips in its policy: a field the tool does not have, a wildcard that matches no tool. */
const slipped = Agent.make({
  name: "mailer",
  model: "mistral-large-latest",
  instructions: "Send what you are asked to send.",
  tools: [sendEmail.spec],
  permissions: new PermissionPolicy.PermissionPolicy({
    default: "ask",
    rules: [
      PermissionPolicy.rule("client.send_email", "allow", { when: [ArgumentCondition.glob("/too", "*@corp.com")] }),
      PermissionPolicy.rule("client.sned_*", "deny")
    ]
  })
})

/** Ids are random and change with every run: the guide prints a grant's id without its random part. */
const masked = (line: string) => line.replace(/\bgrant_[A-Za-z0-9_-]+/g, "grant_…")

/** Who decided each call of the turn, read from its log: the policy's rule, a person, or a grant. */
const audit = (turn: Turn.Turn) =>
  Effect.gen(function*() {
    const events = yield* Stream.runCollect(Turn.events(turn))
    for (const event of events) {
      if (event._tag !== "ToolCallStarted") continue
      const to = (event.arguments as { readonly to?: string }).to
      const resolved = events.find((e): e is TurnEvent.CallbackResolved =>
        e._tag === "CallbackResolved" && e.answer?._tag === "AllowApproval"
      )
      const by = event.decidedBy ?? resolved?.answeredBy
      yield* Console.log(
        masked(`audit: ${event.toolId} to ${to} allowed by ${by === undefined ? "nobody" : Principal.describe(by)}`)
      )
    }
  })

export const program = Effect.gen(function*() {
  // Checked when the session starts: both slips are refused, each with what was probably meant.
  const refused = yield* Effect.flip(Agent.startSession(slipped))
  yield* Console.log(`${refused._tag}:`)
  for (const issue of refused._tag === "PolicyInvalid" ? refused.issues : []) yield* Console.log(`  ${issue}`)

  const session = yield* Agent.startSession(mailer)
  // A colleague: the rule's condition holds, nothing waits.
  const colleague = yield* Session.run(session, "Send Ana the agenda.")
  yield* Console.log(`colleague: ${colleague._tag}`)
  yield* audit(yield* Session.turn(session, colleague.turnId))

  // A customer: no rule holds, the default asks. The person allows, and remembers it for the customer's domain only.
  const customer = yield* Session.run(session, "Send Bob at Acme the invoice.")
  if (customer._tag !== "Blocked") return yield* Effect.die(new Error(`expected Blocked, got ${customer._tag}`))
  const [approval] = customer.callbacks
  const asked = approval._tag === "OpenApproval" ? approval.request.decidedBy._tag : approval._tag
  yield* Console.log(`customer: Blocked on ${approval.kind} (decided by ${asked})`)
  const turn = yield* Session.turn(session, customer.turnId)
  yield* Turn.answer(
    turn,
    approval.id,
    new Answer.AllowApproval({ remember: "session", rememberWhen: [ArgumentCondition.glob("/to", "*@acme.example")] }),
    { label: "alice" }
  )
  yield* Console.log(`customer: ${(yield* Turn.result(turn, { after: customer }))._tag}`)
  const [grant] = yield* Session.grants(session)
  yield* Console.log(masked(
    `grants: ${grant.grantId} ${grant.decision}s ${grant.toolPattern}${
      PermissionPolicy.describeWhen(grant.when)
    } (${grant.scope}), granted ${Principal.describe(grant.grantedBy)}`
  ))

  // Another address at Acme: the grant answers. Anyone else: the policy asks again.
  const acme = yield* Session.run(session, "Send Carol at Acme the invoice too.")
  yield* Console.log(`acme: ${acme._tag}`)
  yield* audit(yield* Session.turn(session, acme.turnId))
  const other = yield* Session.run(session, "And send Dan at Globex a quote.")
  yield* Console.log(`other: ${other._tag === "Blocked" ? `Blocked on ${other.callbacks[0].kind}` : other._tag}`)
})

export const Runtime = LocalTransport.layerMemory({ tools: [sendEmail] }).pipe(
  Layer.provide(ScriptedModel.layer([
    ScriptedModel.toolCall("send_email", { to: "ana@corp.com", subject: "Agenda" }),
    ScriptedModel.text("Sent Ana the agenda."),
    ScriptedModel.toolCall("send_email", { to: "bob@acme.example", subject: "Invoice" }),
    ScriptedModel.text("Sent Bob the invoice."),
    ScriptedModel.toolCall("send_email", { to: "carol@acme.example", subject: "Invoice" }),
    ScriptedModel.text("Sent Carol the invoice."),
    ScriptedModel.toolCall("send_email", { to: "dan@globex.example", subject: "Quote" })
  ]))
)

if (isEntry(import.meta.url)) Effect.runPromise(program.pipe(Effect.provide(Runtime)))
