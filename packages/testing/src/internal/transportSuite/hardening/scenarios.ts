/**
 * The helpers and agents the hardening scenarios share.
 */
import { assert } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import { Builtins } from "@parley/core/AgentSpec"
import * as ParleyError from "@parley/core/ParleyError"
import type * as Session from "@parley/core/Session"
import * as Transport from "@parley/core/Transport"
import type { CallbackResolved, TurnEvent } from "@parley/core/TurnEvent"
import * as Tool from "@parley/tools/Tool"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ScriptedModel from "../../../ScriptedModel.js"
import { ofTag, within } from "../assertions.js"
import { LOCATION, NO_LOCATION } from "../fixtures.js"
import { found, researcher, turnResults } from "../treeAgents.js"
import type { Brain } from "../treeAgents.js"

// =============================================================================
// Bounded waits and typed outcomes
// =============================================================================

/** How an effect ended, in one word: `succeeded`, the tag of a typed Parley error, or what else happened. */
export const outcomeOf = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<string, never, R> =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return "succeeded"
    const died = Cause.findDefect(exit.cause)
    if (Result.isSuccess(died)) return `died: ${String(died.success)}`
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isNone(failure)) return `interrupted: ${Cause.pretty(exit.cause)}`
    return ParleyError.isParleyError(failure.value)
      ? failure.value._tag
      : `untyped failure: ${String(failure.value)}`
  })

/** `effect` fails with the typed Parley error `tag` in its error channel (not a defect), within seconds. */
export const assertFailsWith = <A, E, R>(
  what: string,
  tag: ParleyError.ParleyError["_tag"],
  effect: Effect.Effect<A, E, R>
) => Effect.map(within(what, outcomeOf(effect)), (outcome) => assert.strictEqual(outcome, tag, what))

/** A readable name for a hand-written garbage value. */
export const show = (value: unknown): string => {
  if (typeof value === "function") return "a function"
  if (value === undefined) return "undefined"
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === null) return "Object.create(null)"
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The events of a session from `seq` 0 (for a root: its tree's log), up to the first one `until` accepts. */
export const logUntil = (sessionId: Session.Session["id"], until: (event: TurnEvent) => boolean) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    transport.events(sessionId, 0).pipe(
      Stream.takeUntil(until),
      Stream.runCollect
    ))

export const resolvedIn = (events: ReadonlyArray<TurnEvent>, callbackId: string): ReadonlyArray<CallbackResolved> =>
  ofTag(events, "CallbackResolved").filter((event) => event.callbackId === callbackId)

// =============================================================================
// Fixtures of these scenarios
// =============================================================================

export const HELLO = "Hello."
export const GREETING = "Hello! How can I help?"
export const WHERE = "Where am I?"

/** Greets on `HELLO`; otherwise calls `get_location` and describes the result of this turn's call. */
export const greeterOrLocator = () =>
  ScriptedModel.fromFunction((call) => {
    if (ScriptedModel.lastUserText(call) === HELLO) return ScriptedModel.text(GREETING)
    const located = found(turnResults(call), LOCATION.name)
    if (located === undefined) return ScriptedModel.reply({ toolCalls: [LOCATION] })
    if (located.isFailure) return ScriptedModel.text(NO_LOCATION)
    const where = located.result as { readonly city: string; readonly country: string }
    return ScriptedModel.text(`You're in ${where.city}, ${where.country}.`)
  })

export const PRICES: Record<string, string> = { atlas: "1,200 EUR", nova: "850 EUR" }
export const ATLAS = "What does the Atlas cost?"
export const BOTH = "What do the Atlas and the Nova cost?"

/** A `lookup_price` tool with a handler: `onRun` runs first (count the runs, hold them), then the price comes back. */
export const priceTool = (onRun: (product: string) => Effect.Effect<void>) =>
  Tool.make("lookup_price", {
    description: "Price of one product.",
    parameters: { product: Schema.String },
    success: Schema.Struct({ price: Schema.String })
  }, ({ product }) => Effect.as(onRun(product), { price: PRICES[product.toLowerCase()] ?? "unknown" }))

/** An agent whose `lookup_price` calls need no approval: only the tool's handler answers them. */
export const pricer = (tool: ReturnType<typeof priceTool>) =>
  Agent.make({
    name: "pricer",
    model: "scripted",
    instructions: "Look up the price of each product asked about, then answer in one sentence.",
    tools: [tool],
    permissionMode: "allow"
  })

/** Calls `lookup_price` once per product named in the question (at once), then lists the prices found, sorted. */
export const pricerBrain = () =>
  ScriptedModel.fromFunction((call) => {
    const prices = turnResults(call).filter((result) => result.name === "lookup_price")
    if (prices.length === 0) {
      const question = ScriptedModel.lastUserText(call) ?? ""
      const products = ["Atlas", "Nova"].filter((product) => question.includes(product))
      return ScriptedModel.reply({
        toolCalls: products.map((product) => ({ name: "lookup_price", params: { product } }))
      })
    }
    const found = prices.map((result) => (result.result as { readonly price: string }).price).sort()
    return ScriptedModel.text(`Prices: ${found.join(", ")}.`)
  })

export const ATLAS_ANSWER = "Prices: 1,200 EUR."
export const BOTH_ANSWER = "Prices: 1,200 EUR, 850 EUR."

interface Waited {
  readonly sessionId: string
  readonly state: string
  readonly text?: string
  readonly error?: string
}

// ----- A subagent whose model dies -----

export const worker = Agent.make({
  name: "worker",
  description: "Does one piece of work.",
  instructions: "Do the work you are given and report on it.",
  builtins: new Builtins({ subagents: false })
})

export const boss = Agent.make({
  name: "boss",
  model: "scripted",
  permissionMode: "allow",
  instructions: "Start a worker, wait for it, then report how it went.",
  subagents: [worker]
})

/** Spawns a worker, waits for it, then reports `<state>: <error or text>` from the wait's result. */
export const bossBrain: Brain = (call) => {
  const results = turnResults(call)
  if (found(results, "agents_spawn") === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent: "worker", task: "Tidy the inbox." })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
  const [first] = waited.result as ReadonlyArray<Waited>
  return ScriptedModel.text(`worker ${first.state}: ${first.error ?? first.text ?? ""}`)
}

// ----- fromWaitingTurn: a coordinator of turn 1 starts a researcher during turn 2 -----

/** A tool whose handler answers at once: only its approval holds the coordinator. */
export const proceed = Tool.make("proceed", {
  description: "Ask whether to go on.",
  success: Schema.Struct({ go: Schema.Boolean })
}, () => ({ go: true }))

export const coordinator = Agent.make({
  name: "coordinator",
  description: "Waits for the go, then prices the Nova with a researcher.",
  instructions: "Call proceed, then start a researcher on the Nova, wait for it and repeat its answer.",
  tools: [proceed],
  subagents: [researcher],
  builtins: new Builtins({ subagents: true })
})

export const START = "Start the coordinator."
export const PRICE_ATLAS = "Price the Atlas, then wait for every subagent."

export const lab = Agent.make({
  name: "lab",
  model: "scripted",
  permissionMode: "ask",
  instructions: "Start a coordinator when asked; otherwise price the Atlas with a researcher and wait for all.",
  subagents: [coordinator, researcher]
})

/** `START`: spawns a coordinator and answers without waiting. Otherwise: spawns a researcher, waits for all. */
export const labBrain: Brain = (call) => {
  const results = turnResults(call)
  if (ScriptedModel.lastUserText(call) === START) {
    return found(results, "agents_spawn") === undefined
      ? ScriptedModel.toolCall("agents_spawn", { agent: "coordinator", task: "Go." })
      : ScriptedModel.text("The coordinator is on it.")
  }
  if (found(results, "agents_spawn") === undefined) {
    return ScriptedModel.toolCall("agents_spawn", { agent: "researcher", task: "Atlas" })
  }
  const waited = found(results, "agents_wait")
  if (waited === undefined) return ScriptedModel.toolCall("agents_wait", {})
  return ScriptedModel.text((waited.result as ReadonlyArray<Waited>).map((result) => result.text ?? "").join(" "))
}

/** Calls `proceed`; once it answered, spawns a researcher on the Nova, waits for it and repeats its answer. */
export const coordinatorBrain: Brain = (call) => {
  const results = ScriptedModel.toolResults(call)
  if (found(results, "proceed") === undefined) return ScriptedModel.toolCall("proceed", {})
  const spawned = found(results, "agents_spawn")
  if (spawned === undefined) return ScriptedModel.toolCall("agents_spawn", { agent: "researcher", task: "Nova" })
  const waited = found(results, "agents_wait")
  if (waited === undefined) {
    return ScriptedModel.toolCall("agents_wait", {
      sessionIds: [(spawned.result as { readonly sessionId: string }).sessionId]
    })
  }
  return ScriptedModel.text((waited.result as ReadonlyArray<Waited>)[0].text ?? "")
}
