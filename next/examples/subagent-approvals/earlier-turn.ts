/**
 * The guide's warning, run: a handler answers the callbacks of the whole tree, including those of subagents an
 * earlier turn left running.
 *
 * - Turn 1 ("Deploy the service.") starts a deployer and ends without waiting for it; the deployer's `deploy` call
 *   waits for an approval that turn 1's handler (spawns only) leaves open.
 * - Turn 2 ("Is CI green?") runs with an allow-all handler scoped to the waiting turn's own tree
 *   (`CallbackHandler.scopedToWaitingTurn`): the deploy approval is not from that tree, so it stays open.
 * - Turn 3 asks again with the same allow-all handler, unscoped: it approves the deploy, which nobody asked for in
 *   that turn. The handler's context says so (`fromWaitingTurn: false`).
 *
 * Run it: `npx tsx examples/subagent-approvals/earlier-turn.ts`
 */
import { Agent, Answer, CallbackHandler, Session, Turn, type TurnState } from "@parley/core"
import { Console, Effect } from "effect"
import { isEntry } from "../shared/entry.js"
import * as Narrate from "../shared/narrate.js"
import { offlineRuntimeByAgent } from "../shared/runtime.js"
import { allowAll, ops } from "./agent.js"
import * as Brain from "./brain.js"

export const textOf = (state: TurnState.TurnState): string => state._tag === "Completed" ? state.text : state._tag

/** The approvals open in the session's tree: their tool ids, and whether a subagent asked. */
export const showOpenApprovals = (session: Session.Session, state: TurnState.TurnState) =>
  Effect.gen(function*() {
    const open = yield* Turn.openCallbacks(yield* Session.turn(session, state.turnId))
    const approvals = open.flatMap((callback) =>
      callback._tag === "OpenApproval"
        ? [`${callback.request.tool.id} (asked by ${callback.sessionId === session.id ? "the parent" : "a subagent"})`]
        : []
    )
    yield* Console.log(`approvals still open: ${approvals.length === 0 ? "none" : approvals.join(", ")}`)
  })

/** The allow-all handler, telling what it approves and where the request comes from. */
const allowAllLoudly = CallbackHandler.of({
  approval: (context, request) =>
    Console.log(`allow-all approves ${request.tool.id} (fromWaitingTurn: ${context.fromWaitingTurn})`).pipe(
      Effect.as(new Answer.AllowApproval())
    )
})

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(ops)

  const first = yield* Session.run(session, "Deploy the service.").pipe(
    Effect.provide(
      CallbackHandler.layer(Narrate.handlers({ allowSpawns: CallbackHandler.allowTools(["agents.spawn"]) }))
    )
  )
  yield* Console.log(`turn 1: ${textOf(first)}`)

  const second = yield* Session.run(session, "Is CI green?").pipe(
    Effect.provide(
      CallbackHandler.layer(Narrate.handlers({ scopedAllowAll: CallbackHandler.scopedToWaitingTurn(allowAll) }))
    )
  )
  yield* Console.log(`turn 2, scoped allow-all: ${textOf(second)}`)
  yield* showOpenApprovals(session, second)

  const third = yield* Session.run(session, "Is CI green now?").pipe(
    Effect.provide(CallbackHandler.layer(Narrate.handlers({ allowAll: allowAllLoudly })))
  )
  yield* Console.log(`turn 3, unscoped allow-all: ${textOf(third)}`)
  yield* showOpenApprovals(session, third)

  yield* Session.cancel(session)
})

// ----------------------------------------------------------------------------
// The edge: the offline runtime, one scripted brain per agent
// ----------------------------------------------------------------------------

export const Runtime = offlineRuntimeByAgent(Brain.opsBrains)

export const main = program.pipe(Effect.provide(Runtime))

if (isEntry(import.meta.url)) Effect.runPromise(main)
