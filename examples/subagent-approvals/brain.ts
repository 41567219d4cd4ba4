/**
 * The offline "brains" of the subagent approvals guide: one `ScriptedModel` function per agent, deciding from the
 * conversation the way the guide's model did, so the programs run without an API key and print the guide's output.
 *
 * The parent (`shop`):
 * - first step: starts one researcher per product the question names ("the Atlas", "the Nova"), both in one step,
 *   each with a task naming its product;
 * - once both are started: waits for them (`agents_wait`, with their session ids in the order they were started);
 * - once they have answered: one sentence made of their answers.
 *
 * The researcher: calls `lookup_price` with the product its task names, then answers "The Atlas costs 1,200 EUR.".
 *
 * Tool results are decoded with Schemas; a refused or failed call is reported in the answer instead.
 */
import { ScriptedModel } from "@parley/testing"
import { Option, Schema } from "effect"

/** The products a text names: "the Atlas and the Nova" → `["Atlas", "Nova"]`. */
export const productsIn = (text: string): ReadonlyArray<string> =>
  Array.from(text.matchAll(/\bthe ([A-Z][\w-]*)/g), (match) => match[1])

const Spawned = Schema.Struct({ sessionId: Schema.String })
const Waited = Schema.Array(Schema.Struct({
  agent: Schema.String,
  state: Schema.String,
  text: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
}))
const Price = Schema.Struct({ price: Schema.String })

const decode = <A, I>(schema: Schema.Codec<A, I>, result: ScriptedModel.ToolResult): Option.Option<A> =>
  result.isFailure ? Option.none() : Schema.decodeUnknownOption(schema)(result.result)

/** A tool result as the model quotes it (the runtime's messages end with a full stop). */
const quote = (result: ScriptedModel.ToolResult): string => String(result.result).replace(/\.$/, "")

/** "The Atlas costs 1,200 EUR." + "The Nova costs 850 EUR." → "The Atlas costs 1,200 EUR and the Nova costs 850 EUR." */
const oneSentence = (answers: ReadonlyArray<string>): string =>
  answers
    .map((answer, i) => answer.replace(/\.$/, "").replace(/^The /, i === 0 ? "The " : "the "))
    .join(" and ") + "."

/** The parent's brain: start a researcher per product, wait for them all, answer in one sentence. */
export const shop = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  const spawns = results.filter((result) => result.name === "agents_spawn")
  const waited = results.find((result) => result.name === "agents_wait")
  if (spawns.length === 0) {
    const products = productsIn(ScriptedModel.lastUserText(call) ?? "")
    if (products.length === 0) return ScriptedModel.text("Which product do you mean?")
    return ScriptedModel.reply({
      toolCalls: products.map((product) => ({
        name: "agents_spawn",
        params: { agent: "researcher", task: `Find the price of the ${product}.` }
      }))
    })
  }
  const refused = spawns.filter((result) => result.isFailure)
  if (refused.length > 0) return ScriptedModel.text(`I couldn't start a researcher: ${quote(refused[0])}.`)
  if (waited === undefined) {
    const sessionIds = spawns.flatMap((result) => Option.toArray(decode(Spawned, result)).map((s) => s.sessionId))
    return ScriptedModel.toolCall("agents_wait", { sessionIds })
  }
  return Option.match(decode(Waited, waited), {
    onNone: () => ScriptedModel.text(`I couldn't get the researchers' answers: ${quote(waited)}.`),
    onSome: (researchers) =>
      ScriptedModel.text(
        oneSentence(researchers.map(({ agent, error, state, text }) =>
          text ?? `The ${agent} ended ${state}${error === undefined ? "" : `: ${error}`}.`
        ))
      )
  })
}

/** The researcher's brain: look up the product its task names, then report its price. */
export const researcher = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const task = ScriptedModel.lastUserText(call) ?? ""
  const product = productsIn(task)[0] ?? task
  const looked = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  if (looked === undefined) return ScriptedModel.toolCall("lookup_price", { product })
  return Option.match(decode(Price, looked), {
    onNone: () => ScriptedModel.text(`I couldn't look up the price of the ${product}: ${quote(looked)}.`),
    onSome: ({ price }) => ScriptedModel.text(`The ${product} costs ${price}.`)
  })
}

/** The brains by agent name: give them to `offlineRuntimeByAgent` (see `../shared/runtime.ts`). */
export const brains = { shop, researcher }

/**
 * The ops assistant's brain (earlier-turn.ts): asked to deploy, it starts a deployer and answers without waiting for
 * it; asked about CI, it answers "CI is green.".
 */
export const ops = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const question = ScriptedModel.lastUserText(call) ?? ""
  if (!question.startsWith("Deploy")) return ScriptedModel.text("CI is green.")
  // the last message is the user's question: this turn has not started a deployer yet
  if (call.prompt.content[call.prompt.content.length - 1]?.role === "user") {
    return ScriptedModel.toolCall("agents_spawn", { agent: "deployer", task: "Deploy the service." })
  }
  const spawned = ScriptedModel.toolResults(call).filter((result) => result.name === "agents_spawn").at(-1)
  return ScriptedModel.text(
    spawned === undefined || spawned.isFailure ? "I couldn't start a deployer." : "The deployer is on it."
  )
}

/** The deployer's brain: calls `deploy`, then reports what happened. */
export const deployer = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const deployed = ScriptedModel.toolResults(call).find((result) => result.name === "deploy")
  if (deployed === undefined) return ScriptedModel.toolCall("deploy", {})
  return ScriptedModel.text(deployed.isFailure ? `Not deployed: ${quote(deployed)}.` : "The service is deployed.")
}

/** The brains of earlier-turn.ts, by agent name. */
export const opsBrains = { ops, deployer }
