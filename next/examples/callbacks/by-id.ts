/**
 * Answer by id: a run without handlers returns `Blocked` as soon as the turn waits on callbacks. The program answers
 * what `Blocked` lists with `answerCallback`, then waits again with `Turn.result(turn, { after: state })`, until the
 * turn ends. The answers could come from any other process: they go through the transport, by id.
 *
 * Run it: `npx tsx examples/callbacks/by-id.ts`
 */
import { Agent, Session, Turn, type TurnState } from "@parley/core"
import { Console, Effect } from "effect"
import { describeState, isEntry } from "../shared/entry.js"
import { offlineRuntime } from "../shared/runtime.js"
import { answerCallback, assistant, question } from "./agent.js"
import * as Brain from "./brain.js"

export const program = Effect.gen(function*() {
  let state: TurnState.TurnState = yield* Agent.run(assistant, question)
  const session = yield* Agent.session(assistant, state.sessionId)
  while (state._tag === "Blocked") {
    const turn = yield* Session.turn(session, state.turnId)
    for (const callback of state.callbacks) {
      yield* Console.log(`answering: ${callback.kind}`)
      yield* answerCallback(turn, callback)
    }
    state = yield* Turn.result(turn, { after: state })
  }
  yield* Console.log(describeState(state))
  yield* Session.cancel(session)
})

// ----------------------------------------------------------------------------
// The edge: the offline runtime, with the model's wording of this guide output
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntime(Brain.make({
  signInDenied: "As for your latest email: I asked to connect your Gmail account, but the sign-in was denied, so I " +
    "wasn't able to access your inbox. If you'd like, I can ask again to authorize Gmail and then tell you what your " +
    "latest email is about."
}))

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
