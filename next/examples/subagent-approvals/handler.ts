/**
 * One handler for the whole tree: `Session.run` with `pricePolicy` provided as a Layer. The handler answers the
 * parent's two `agents.spawn` approvals and each researcher's `client.lookup_price` approval; the `lookup_price`
 * calls themselves are answered by the tool's own handler. Nothing is left open, so the run returns `Completed`.
 *
 * Run it: `npx tsx examples/subagent-approvals/handler.ts`
 */
import { Agent, CallbackHandler, Session } from "@parley/core"
import { Console, Effect } from "effect"
import { isEntry } from "../shared/entry.js"
import * as Narrate from "../shared/narrate.js"
import { offlineRuntimeByAgent } from "../shared/runtime.js"
import { agent, pricePolicy, question } from "./agent.js"
import * as Brain from "./brain.js"

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(agent)
  const state = yield* Session.run(session, question).pipe(
    Effect.provide(CallbackHandler.layer(Narrate.handlers({ pricePolicy }))) // answers the whole tree
  )
  if (state._tag === "Completed") yield* Console.log(state.text)
  yield* Session.cancel(session)
})

// ----------------------------------------------------------------------------
// The edge: the offline runtime, one scripted brain per agent
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntimeByAgent(Brain.brains)

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
