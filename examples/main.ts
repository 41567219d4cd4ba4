/**
 * `npm run demo`: the walkthrough of every guide's examples, in order. Each folder holds one guide's programs and its
 * own `main.ts`; this file only runs them one after the other.
 *
 * The examples run offline: every agent's model is a scripted brain (`ScriptedModel` from `@parley/testing`) that
 * answers the way the guide's model did. See `shared/runtime.ts` for the one place where the model is chosen.
 */
import { Console, Effect } from "effect"
import * as Callbacks from "./callbacks/main.js"
import * as DeliverCallbacks from "./deliver-callbacks/main.js"
import { isEntry } from "./shared/entry.js"
import { modelDescription } from "./shared/runtime.js"
import * as SubagentApprovals from "./subagent-approvals/main.js"

export const main = Effect.all([
  Console.log(`Parley examples, ${modelDescription("mistral-large-latest")}.`),
  Console.log(""),
  Console.log("# Callbacks (docs/guides/callbacks.md)"),
  Callbacks.main,
  Console.log(""),
  Console.log("# Subagent approvals (docs/guides/subagent-approvals.md)"),
  SubagentApprovals.main,
  Console.log(""),
  Console.log("# Deliver callbacks (docs/guides/deliver-callbacks.md)"),
  DeliverCallbacks.program
], { discard: true })

if (isEntry(import.meta.url)) Effect.runPromise(main)
