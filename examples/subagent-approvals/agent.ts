/**
 * The example agent of the subagent approvals guide, and the handler that answers its tree.
 *
 * A shop assistant that starts one `researcher` subagent per product. Each researcher calls the `lookup_price` tool,
 * whose handler the SDK runs. The assistant's permission mode is `ask`, and subagents inherit it: starting a
 * researcher (`agents.spawn`) and each `lookup_price` call wait for an approval.
 *
 * Nothing runs on import: this file only defines values.
 */
import { Agent, AgentSpec, Answer, CallbackHandler } from "@parley/core"
import { Tool } from "@parley/tools"
import { Schema } from "effect"

// ----------------------------------------------------------------------------
// The example agent
// ----------------------------------------------------------------------------

export const PRICES: { readonly [product: string]: string } = { atlas: "1,200 EUR", nova: "850 EUR" }

/**
 * A tool with a handler: the SDK answers its calls by running the handler, in whichever session calls it.
 * (`handlerName` is the name the log records for its answers, which the lines `npm run demo` prints read.)
 */
export const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String }),
  handlerName: "lookupPrice"
}, ({ product }) => ({ price: PRICES[product.toLowerCase()] ?? "unknown" }))

/** The subagent: looks up one product. It cannot start subagents of its own. */
export const researcher = Agent.make({
  name: "researcher",
  description: "Looks up one product and reports its price.",
  instructions: "Call lookup_price once, then answer with the product name and its price.",
  tools: [lookupPrice],
  builtins: new AgentSpec.Builtins({ subagents: false })
})

export const agent = Agent.make({
  name: "shop",
  description: "Answers what our products cost: one researcher subagent per product named \"the …\", each asking " +
    "before it looks a price up. Try: \"What do the Atlas and the Nova cost?\"; \"What does the Atlas cost?\"",
  model: "mistral-large-latest",
  permissionMode: "ask",
  instructions: "You answer questions about our products. Start one researcher per product, wait for every result, " +
    "then answer in one sentence.",
  subagents: [researcher]
})

export const question = "What do the Atlas and the Nova cost?"

// ----------------------------------------------------------------------------
// One handler for the whole tree
// ----------------------------------------------------------------------------

/** The stable ids of the tools this program lets run: starting a researcher, and looking up a price. */
export const allowed: ReadonlyArray<string> = ["agents.spawn", "client.lookup_price"]

/**
 * Answers the approvals of the parent and of every researcher. Decides on the tool's stable id
 * (`request.tool.id`), never on its display name; leaves anything else open for a person.
 */
export const pricePolicy = CallbackHandler.of({
  approval: (_context, request) =>
    allowed.includes(request.tool.id) ? new Answer.AllowApproval() : new Answer.KeepCallbackOpen()
})

// ----------------------------------------------------------------------------
// The warning: subagents of earlier turns (earlier-turn.ts)
// ----------------------------------------------------------------------------

/** A tool that acts: deploys the service. */
export const deploy = Tool.make("deploy", {
  description: "Deploy the service.",
  success: Schema.Struct({ deployed: Schema.Boolean }),
  handlerName: "deploy"
}, () => ({ deployed: true }))

export const deployer = Agent.make({
  name: "deployer",
  description: "Deploys the service.",
  instructions: "Call deploy, then say that the service is deployed.",
  tools: [deploy],
  builtins: new AgentSpec.Builtins({ subagents: false })
})

/** An ops assistant: starts a deployer when asked to deploy, and does not wait for it. */
export const ops = Agent.make({
  name: "ops",
  description: "An ops assistant: asked to deploy, it starts a deployer subagent (whose deploy asks for approval) " +
    "and does not wait for it; anything else, it reports on CI. Try: \"Deploy the service\"; \"How is CI?\"",
  model: "mistral-large-latest",
  permissionMode: "ask",
  instructions: "Start a deployer when asked to deploy; do not wait for it. Answer in one short sentence.",
  subagents: [deployer]
})

/** The handler the warning is about: it allows every tool call of the tree. */
export const allowAll = CallbackHandler.of({
  approval: () => new Answer.AllowApproval()
})
