/**
 * Answer while a run waits: `Agent.run` with the handlers as a Layer. `approveReads` allows the `get_location` call
 * (the tool declares that it only reads), `answerLocation` answers it and `refuseSignIns` refuses the Gmail
 * sign-in; nothing is left open, so the run returns `Completed`.
 *
 * Run it: `npx tsx examples/callbacks/with-run.ts`
 */
import { Agent, Session } from "@parley/core"
import { Console, Effect } from "effect"
import { describeState, isEntry } from "../shared/entry.js"
import { offlineRuntime } from "../shared/runtime.js"
import { assistant, Handlers, question } from "./agent.js"
import * as Brain from "./brain.js"

export const program = Effect.gen(function*() {
  const state = yield* Agent.run(assistant, question)
  yield* Console.log(describeState(state))
  yield* Session.cancel(yield* Agent.session(assistant, state.sessionId))
}).pipe(Effect.provide(Handlers))

// ----------------------------------------------------------------------------
// The edge: the offline runtime, with the model's wording of this guide output
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntime(Brain.make({
  signInDenied: "As for your latest email — I asked you to sign in to Gmail so I could check, but the sign-in was " +
    "denied, so I wasn't able to read your inbox. If you'd like, I can ask again to enable the Gmail connector and " +
    "then pull up your most recent email."
}))

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
