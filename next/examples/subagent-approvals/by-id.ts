/**
 * Answer the tree by id: without a handler, `Session.run` returns `Blocked`, and `state.callbacks` lists the open
 * approvals of the whole tree — the parent's and the researchers'. Each names the session that asked
 * (`callback.sessionId`), so the program can tell the parent's from a subagent's. Every answer goes through the root
 * turn (`state.turnId`), even for a subagent's approval; then `Turn.result(turn, { after: state })` waits again.
 *
 * Run it: `npx tsx examples/subagent-approvals/by-id.ts`
 */
import { Agent, Answer, Session, Turn, type TurnState } from "@parley/core"
import { Console, Effect } from "effect"
import { isEntry } from "../shared/entry.js"
import { offlineRuntimeByAgent } from "../shared/runtime.js"
import { agent, question } from "./agent.js"
import * as Brain from "./brain.js"

/** Python's `print(a == b, ...)`, as the guide prints it. */
const pyBool = (value: boolean): string => value ? "True" : "False"

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(agent)
  let state: TurnState.TurnState = yield* Session.run(session, question)
  while (state._tag === "Blocked") {
    const turn = yield* Session.turn(session, state.turnId) // the root's turn, for every callback of the tree
    for (const callback of state.callbacks) {
      if (callback._tag === "OpenApproval") {
        yield* Console.log(`${pyBool(callback.sessionId === session.id)} ${callback.request.tool.id}`)
        yield* Turn.answer(turn, callback.id, new Answer.AllowApproval())
      }
    }
    state = yield* Turn.result(turn, { after: state })
  }
  if (state._tag === "Completed") yield* Console.log(state.text)
  yield* Session.cancel(session)
})

// ----------------------------------------------------------------------------
// The edge: the offline runtime, one scripted brain per agent
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntimeByAgent(Brain.brains)

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
