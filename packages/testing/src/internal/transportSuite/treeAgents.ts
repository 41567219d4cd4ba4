/**
 * The fixtures of the tree scenarios, after the subagent approvals guide: a `shop` agent that starts one `researcher`
 * per product (each calls the `lookup_price` client tool), an `ops` agent whose `deployer` subagent outlives the turn
 * that started it, and a chain `top` → `middle` → `researcher` (depth 2).
 *
 * A transport runs every agent on one model, so the tree's brains share one `ScriptedModel`: `treeModel` sends each
 * call to the brain of the agent whose instructions are the call's system message.
 */
import * as Agent from "@parley/core/Agent"
import { Builtins } from "@parley/core/AgentSpec"
import * as Tool from "@parley/tools/Tool"
import * as AiError from "effect/ai/AiError"
import * as Prompt from "effect/ai/Prompt"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ScriptedModel from "../../ScriptedModel.js"

// =============================================================================
// Brains
// =============================================================================

/** How one agent of a tree answers a model call. */
export type Brain = (call: ScriptedModel.Call) => ScriptedModel.Reply

/** The system message of a call: the instructions of the agent that made it. */
const systemText = (call: ScriptedModel.Call): string =>
  call.prompt.content.flatMap((message) => message.role === "system" ? [message.content] : []).join("\n")

/** The agent a call comes from, by its instructions; `undefined` for none of `agents`. */
export const agentOf = (call: ScriptedModel.Call, agents: ReadonlyArray<Agent.Agent>): string | undefined =>
  agents.find((agent) => agent.spec.instructions === systemText(call))?.spec.name

/**
 * One model for a whole tree: a call goes to the brain of the agent whose instructions are its system message (the
 * agents of one tree have distinct instructions). A call from no known agent fails the model call.
 */
export const treeModel = (
  brains: ReadonlyArray<readonly [Agent.Agent, Brain]>
): Effect.Effect<ScriptedModel.Service> =>
  ScriptedModel.fromFunction((call) => {
    const entry = brains.find(([agent]) => agent.spec.instructions === systemText(call))
    if (entry !== undefined) return entry[1](call)
    return Effect.fail(AiError.make({
      module: "TransportSuite",
      method: call.method,
      reason: new AiError.UnknownError({
        description: `no brain for the system message ${JSON.stringify(systemText(call))}`
      })
    }))
  })

/** The tool results of the call's last turn (after its last user message). */
export const turnResults = (call: ScriptedModel.Call): ReadonlyArray<ScriptedModel.ToolResult> => {
  const content = call.prompt.content
  const lastUser = content.map((message) => message.role).lastIndexOf("user")
  return ScriptedModel.toolResults({ ...call, prompt: Prompt.fromMessages(content.slice(lastUser + 1)) })
}

export const found = (results: ReadonlyArray<ScriptedModel.ToolResult>, name: string) =>
  results.find((result) => result.name === name)

interface Waited {
  readonly sessionId: string
  readonly state: string
  readonly text?: string
}

// =============================================================================
// Shop: two researchers at once
// =============================================================================

const PRICES: Record<string, string> = { atlas: "1,200 EUR", nova: "850 EUR" }

/** The guide's `lookup_price` client tool; its handler comes with the agents that carry it. */
export const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, ({ product }) => ({ price: PRICES[product.toLowerCase()] ?? "unknown" }))

/** Looks up the product it is given (its task) and cannot start subagents. */
export const researcher = Agent.make({
  name: "researcher",
  description: "Looks up one product and reports its price.",
  instructions: "Call lookup_price once, then answer with the product name and its price.",
  tools: [lookupPrice],
  builtins: new Builtins({ subagents: false })
})

/** Asks before every tool call (`permissionMode: "ask"`); its researchers inherit the policy. */
export const shop = Agent.make({
  name: "shop",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start one researcher per product, wait for every result, then answer in one sentence.",
  subagents: [researcher]
})

export const SHOP_QUESTION = "What do the Atlas and the Nova cost?"
export const SHOP_ANSWER = "The Atlas costs 1,200 EUR and the Nova costs 850 EUR."

/** Spawns a researcher for the Atlas and one for the Nova at once, waits for both, answers in one sentence. */
export const shopBrain: Brain = (call) => {
  const results = turnResults(call)
  const spawned = results.filter((result) => result.name === "agents_spawn")
  if (spawned.length === 0) {
    return ScriptedModel.reply({
      toolCalls: [
        { name: "agents_spawn", params: { agent: "researcher", task: "Atlas" } },
        { name: "agents_spawn", params: { agent: "researcher", task: "Nova" } }
      ]
    })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) {
    const sessionIds = spawned.map((result) => (result.result as { readonly sessionId: string }).sessionId)
    return ScriptedModel.toolCall("agents_wait", { sessionIds })
  }
  const texts = (waited.result as ReadonlyArray<Waited>).map((result) => (result.text ?? "").replace(/\.$/, ""))
  return ScriptedModel.text(`${texts[0]} and ${texts[1].replace(/^The/, "the")}.`)
}

/** Calls `lookup_price` for its task, then reports the price. */
export const researcherBrain: Brain = (call) => {
  const results = turnResults(call)
  const product = ScriptedModel.lastUserText(call) ?? ""
  const price = found(results, "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product })
  return ScriptedModel.text(`The ${product} costs ${(price.result as { readonly price: string }).price}.`)
}

// =============================================================================
// Ops: a deployer that outlives its turn
// =============================================================================

/** A client tool whose handler deploys at once: only its approval holds the deployer. */
export const deploy = Tool.make("deploy", {
  description: "Deploy the service.",
  success: Schema.Struct({ deployed: Schema.Boolean })
}, () => ({ deployed: true }))

export const deployer = Agent.make({
  name: "deployer",
  description: "Deploys the service.",
  instructions: "Call deploy, then say that the service is deployed.",
  tools: [deploy],
  builtins: new Builtins({ subagents: false })
})

/** Starts a deployer and answers without waiting for it: the deployer outlives the turn. */
export const ops = Agent.make({
  name: "ops",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start a deployer when asked to deploy, wait for it or stop it when asked, answer CI questions.",
  subagents: [deployer]
})

export const DEPLOY = "Deploy the service."
export const CI = "Is CI green?"
export const WAIT = "Wait for the deployer."
export const STOP = "Stop the deployer."

/**
 * `DEPLOY`: spawns a deployer, then "The deployer is on it." `WAIT`: waits for it, then reports its answer. `STOP`:
 * interrupts it, then "Stopped." Anything else: "CI is green."
 */
export const opsBrain: Brain = (call) => {
  const question = ScriptedModel.lastUserText(call) ?? ""
  const results = turnResults(call)
  const spawn = found(ScriptedModel.toolResults(call), "agents_spawn")
  const deployerId = (spawn?.result as { readonly sessionId: string } | undefined)?.sessionId ?? ""
  switch (question) {
    case DEPLOY:
      return found(results, "agents_spawn") === undefined
        ? ScriptedModel.toolCall("agents_spawn", { agent: "deployer", task: DEPLOY })
        : ScriptedModel.text("The deployer is on it.")
    case WAIT: {
      const waited = found(results, "agents_wait")
      if (waited === undefined) return ScriptedModel.toolCall("agents_wait", { sessionIds: [deployerId] })
      return ScriptedModel.text(`The deployer says: ${(waited.result as ReadonlyArray<Waited>)[0].text ?? "nothing"}`)
    }
    case STOP:
      return found(results, "agents_interrupt") === undefined
        ? ScriptedModel.toolCall("agents_interrupt", { sessionId: deployerId })
        : ScriptedModel.text("Stopped.")
    default:
      return ScriptedModel.text("CI is green.")
  }
}

/** Calls `deploy`, then "Deployed." */
export const deployerBrain: Brain = (call) =>
  found(turnResults(call), "deploy") === undefined
    ? ScriptedModel.toolCall("deploy", {})
    : ScriptedModel.text("Deployed.")

// =============================================================================
// Depth 2: top → middle → researcher
// =============================================================================

/** A subagent that may start subagents of its own (its builtins allow it). */
export const middle = Agent.make({
  name: "middle",
  description: "Delegates a product to a researcher.",
  instructions: "Start a researcher on your task, wait for it, then repeat its answer.",
  subagents: [researcher],
  builtins: new Builtins({ subagents: true })
})

export const top = Agent.make({
  name: "top",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start a middle agent on the question, wait for it, then repeat its answer.",
  subagents: [middle]
})

/** Spawns `agent` on the Atlas, waits for it, repeats its answer. */
export const delegateBrain = (agent: string): Brain => (call) => {
  const results = turnResults(call)
  if (found(results, "agents_spawn") === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent, task: "Atlas" })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
  return ScriptedModel.text((waited.result as ReadonlyArray<Waited>)[0].text ?? "")
}
