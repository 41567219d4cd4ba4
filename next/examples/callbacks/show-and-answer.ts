/**
 * A session app with functions: the app starts a turn with `Session.sendMessage` and shows its events with
 * `Turn.result(turn, { onEvent: show })`, while the handlers (provided as a Layer around the program) answer. What
 * they leave open comes back in `Blocked`, and the app answers it by id (in an app: when the person clicks).
 *
 * Run it: `npx tsx examples/callbacks/show-and-answer.ts`
 */
import { Agent, Session, Turn, type TurnEvent, type TurnState } from "@parley/core"
import { Console, Effect } from "effect"
import { describeState, isEntry } from "../shared/entry.js"
import { offlineRuntime } from "../shared/runtime.js"
import { answerCallback, assistant, Handlers, question } from "./agent.js"
import * as Brain from "./brain.js"

/** Shows one event. In an app: show the callback until its `CallbackResolved` comes. */
export const show = (event: TurnEvent.TurnEvent) =>
  event._tag === "CallbackOpened" ? Console.log(`waiting on: ${event.callback.kind}`) : Effect.void

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(assistant)
  const turn = yield* Session.sendMessage(session, question)
  let state: TurnState.TurnState = yield* Turn.result(turn, { onEvent: show })
  while (state._tag === "Blocked") {
    for (const callback of state.callbacks) {
      yield* answerCallback(turn, callback) // in an app: when the person clicks
    }
    state = yield* Turn.result(turn, { after: state, onEvent: show })
  }
  yield* Console.log(describeState(state))
  yield* Session.cancel(session)
}).pipe(Effect.provide(Handlers))

// ----------------------------------------------------------------------------
// The edge: the offline runtime, with the model's wording of this guide output
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntime(Brain.make({
  signInDenied: "As for your latest email: the Gmail connector isn't signed in, and when I asked to enable it, the " +
    "sign-in was denied — so I can't read your inbox right now. If you sign in to Gmail, I can check your latest " +
    "email for you."
}))

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
