import type { Ids } from "@parley/core"
import { AgentSpec, Permissions, ToolSpec } from "@parley/core"
import type { TreeState } from "@parley/log"
import { DateTime, Duration, Effect, Option, Result } from "effect"
import * as Connectors from "../../src/Connectors.js"
import { resolveTools } from "../../src/internal/agentTools.js"
import type { Env } from "../../src/internal/decide.js"
import type { IdPrefix, Seed } from "../../src/internal/tx.js"
import { mint } from "../../src/internal/tx.js"

// The world the rules are stated in: one tree (`ses_spec`), an agent with a tool of every kind and a policy that
// allows, asks and denies, a connector, a subagent with a client tool of its own, and two engines that may own the tree.

export const treeId = "ses_spec" as Ids.SessionId

/**
 * The secret every step's ids are minted from. The engine draws a new one for each decision; the rules fix it, so a
 * rule can name the ids it expects: `turnAt(0)` is the turn the event at seq 0 creates.
 */
export const seed: Seed = new TextEncoder().encode("spec")

const minted = (prefix: IdPrefix) => (seq: number) => mint(seed, prefix, seq)
/** The turn the event at `seq` queues. */
export const turnAt = minted("turn") as (seq: number) => Ids.TurnId
/** The subagent's session the event at `seq` starts. */
export const sessionAt = minted("ses") as (seq: number) => Ids.SessionId
/** The callback the event at `seq` opens. */
export const callbackAt = minted("cb") as (seq: number) => Ids.CallbackId
/** The grant the event at `seq` records. */
export const grantAt = minted("grant")

/** The time every step is decided at unless it says otherwise; callbacks wait one hour from it. */
export const t0 = DateTime.makeUnsafe(1_700_000_000_000)
export const minutesAfter = (minutes: number) => DateTime.addDuration(t0, Duration.minutes(minutes))

const tool = (
  name: string,
  options: {
    readonly runsIn?: "client" | "runtime"
    readonly idempotent?: boolean
    readonly success?: ToolSpec.JsonSchema
    readonly parameters?: ToolSpec.JsonSchema
  } = {}
) =>
  new ToolSpec.ToolSpec({
    id: `client.${name}` as Ids.ToolId,
    name,
    description: name,
    parameters: options.parameters ?? { type: "object", properties: {} },
    ...(options.success === undefined ? {} : { success: options.success }),
    annotations: new ToolSpec.ToolAnnotations({ idempotentHint: options.idempotent ?? false }),
    runsIn: options.runsIn ?? "client"
  })

/** A runtime tool the policy asks for; running it twice is not harmless. */
export const charge = tool("charge", {
  runsIn: "runtime",
  parameters: { type: "object", properties: { amount: { type: "number" }, to: { type: "string" } } }
})
/** A runtime tool the policy allows; running it again is harmless. */
export const fetchRates = tool("fetch_rates", { runsIn: "runtime", idempotent: true })
/** A client tool the policy allows, whose success value must be `{ city: string }`. */
export const getLocation = tool("get_location", {
  success: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
})
/** A client tool the policy asks for. */
export const sendEmail = tool("send_email")
/** A client tool the policy denies. */
export const deleteAll = tool("delete_all")
/** The subagent's own client tool (allowed: the subagent has its parent's policy). */
export const lookup = tool("lookup")

export const policy = new Permissions.PermissionPolicy({
  default: "allow",
  rules: [
    new Permissions.PermissionRule({ tools: ["client.charge", "client.send_email"], decision: "ask" }),
    new Permissions.PermissionRule({ tools: ["client.delete_all"], decision: "deny" })
  ]
})

export const researcher = AgentSpec.make({ name: "researcher", instructions: "Look things up.", tools: [lookup] })

/** The agent of most rules. Its model calls the connector's tool `gmail_latest_email` and the `agents_*` builtins. */
export const assistant = AgentSpec.make({
  name: "assistant",
  model: "scripted",
  instructions: "Help.",
  tools: [charge, fetchRates, getLocation, sendEmail, deleteAll],
  connectors: ["gmail"],
  subagents: [researcher],
  permissions: policy
})

/** The same agent allowed a single model step per turn. */
export const oneStep = AgentSpec.make({ ...assistant, maxSteps: 1 })

export const gmail = Connectors.make("gmail", [
  { name: "latest_email", description: "The latest email.", run: () => Effect.succeed({ subject: "Hi" }) }
])

/** A connector that signs in on its server's demand (an MCP server behind OAuth): its calls run without asking first. */
export const mail: Connectors.Connector = {
  ...Connectors.make("mail", [
    { name: "send_message", description: "Send an email.", run: () => Effect.succeed("Sent.") }
  ]),
  askFirst: false
}

/** The agent of the sign-in rules: it has the `mail` connector too. */
export const mailer = AgentSpec.make({ ...assistant, name: "mailer", connectors: ["gmail", "mail"] })

export const env: Env = {
  toolsOf: (spec) =>
    Result.getOrElse(
      resolveTools(spec, {
        get: (source) =>
          source === "gmail" ? Option.some(gmail) : source === "mail" ? Option.some(mail) : Option.none(),
        revision: () => 0
      }),
      () => new Map()
    )
}

export const header = (agent: AgentSpec.AgentSpec): TreeState.Header => ({ treeId, agent, createdAt: t0 })

/** A subagent with a subagent of its own. */
export const manager = AgentSpec.make({ name: "manager", instructions: "Delegate.", subagents: [researcher] })
/** The agent of the rules about trees two levels deep: `lead` → `manager` → `researcher`. */
export const lead = AgentSpec.make({ ...assistant, name: "lead", subagents: [manager] })

/** `lookup` whose success value must have the property `key`. */
const lookupNeeding = (key: string) =>
  new ToolSpec.ToolSpec({ ...lookup, success: { type: "object", properties: {}, required: [key] } }, {
    disableChecks: true
  })

/**
 * An agent with a tool of the same id as its subagent's and another success schema: the root's `lookup` returns
 * `{ a }`, the researcher's `{ b }`.
 */
export const shadowing = AgentSpec.make({
  ...assistant,
  name: "shadowing",
  tools: [...assistant.tools, lookupNeeding("a")],
  subagents: [AgentSpec.make({ ...researcher, tools: [lookupNeeding("b")] })]
})
