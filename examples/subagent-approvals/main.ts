/**
 * The subagent approvals walkthrough: the guide's two programs in order, then its warning about subagents of earlier
 * turns (earlier-turn.ts), each on its own offline runtime.
 *
 * Run it: `npx tsx examples/subagent-approvals/main.ts` (its output is `expected-output.txt`).
 */
import { Console, Effect } from "effect"
import { isEntry } from "../shared/entry.js"
import * as ById from "./by-id.js"
import * as EarlierTurn from "./earlier-turn.js"
import * as Handler from "./handler.js"

const section = <E>(name: string, program: Effect.Effect<void, E>) =>
  Console.log(`=== ${name} ===`).pipe(Effect.andThen(program))

export const main = Effect.all([
  section("handler", Handler.main),
  section("by-id", ById.main),
  section("earlier-turn", EarlierTurn.main)
], { discard: true })

if (isEntry(import.meta.url)) Effect.runPromise(main)
