/**
 * A session app by hand: the app follows the turn with `Turn.events` (a read-only `Stream` that ends with
 * `TurnEnded`) and answers each callback by id when its `CallbackOpened` event comes, with the same
 * `answerCallback`. No handler is provided: handlers never answer while `Turn.events` runs anyway.
 *
 * Run it: `npx tsx examples/callbacks/from-app.ts`
 */
import { Agent, Session, Turn } from "@parley/core"
import { Console, Effect, Stream } from "effect"
import { isEntry } from "../shared/entry.js"
import { offlineRuntime } from "../shared/runtime.js"
import { answerCallback, assistant, question } from "./agent.js"
import * as Brain from "./brain.js"

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(assistant)
  const turn = yield* Session.sendMessage(session, question)
  yield* Turn.events(turn).pipe(
    Stream.runForEach((event) => {
      switch (event._tag) {
        case "CallbackOpened":
          return Console.log(`answering: ${event.callback.kind}`).pipe(
            Effect.andThen(answerCallback(turn, event.callback)) // in an app: when the person clicks
          )
        case "TurnEnded":
          return Console.log(event.state._tag)
        default:
          return Effect.void
      }
    })
  )
  yield* Session.cancel(session)
})

// ----------------------------------------------------------------------------
// The edge: the offline runtime (the guide prints no text for this program)
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntime(Brain.make({
  signInDenied: "As for your latest email: the Gmail sign-in was denied, so I couldn't read your inbox."
}))

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
