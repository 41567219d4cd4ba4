/**
 * The callbacks walkthrough: the guide's four programs in order, each on its own offline runtime.
 *
 * Run it: `npx tsx examples/callbacks/main.ts` (its output is `expected-output.txt`).
 */
import { Console, Effect } from "effect"
import { isEntry } from "../shared/entry.js"
import * as ById from "./by-id.js"
import * as FromApp from "./from-app.js"
import * as ShowAndAnswer from "./show-and-answer.js"
import * as WithRun from "./with-run.js"

const section = <E>(name: string, program: Effect.Effect<void, E>) =>
  Console.log(`=== ${name} ===`).pipe(Effect.andThen(program))

export const main = Effect.all([
  section("with-run", WithRun.main),
  section("by-id", ById.main),
  section("show-and-answer", ShowAndAnswer.main),
  section("from-app", FromApp.main)
], { discard: true })

if (isEntry(import.meta.url)) Effect.runPromise(main)
