/**
 * The demo the repository's server offers (`npm start`, `npm run serve`, `npx parley serve`): the guides' agents —
 * `assistant` (callbacks), `shop` (subagent approvals), `ops` — each on the scripted brain that answers for it
 * offline, the demo `gmail` mailbox, and the guides' walkthrough for `npx parley demo` (over HTTP).
 *
 * Nothing runs on import: the walkthrough's modules load when it runs.
 */
import type { Cli, Serve } from "@parley/cli"
import { Models } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Effect, Record } from "effect"
import * as CallbacksAgent from "../callbacks/agent.js"
import * as CallbacksBrain from "../callbacks/brain.js"
import * as ApprovalsAgent from "../subagent-approvals/agent.js"
import * as ApprovalsBrain from "../subagent-approvals/brain.js"

/** The guides' agents by name, each on its scripted brain. */
const models = Effect.map(
  Effect.all(Record.map({
    assistant: CallbacksBrain.make({
      signInDenied: "As for your latest email: the Gmail sign-in was denied, so I could not read your inbox."
    }),
    ...ApprovalsBrain.brains,
    ...ApprovalsBrain.opsBrains
  }, (brain) => ScriptedModel.fromFunction(brain, { record: false }))),
  (scripted) => Models.byAgent(Record.map(scripted, (model) => model.languageModel))
)

export const demo: Serve.Demo = {
  models,
  agents: [CallbacksAgent.assistant.spec, ApprovalsAgent.agent.spec, ApprovalsAgent.ops.spec]
}

/** The guides' walkthrough (`npm run demo`), its sessions driven over HTTP against a server it starts. */
const walkthrough = Effect.suspend(() => {
  process.env.PARLEY_EXAMPLES_TRANSPORT ??= "http"
  return Effect.flatMap(Effect.promise(() => import("../main.js")), (module) => Effect.orDie(module.main))
})

export const extras: Cli.Extras = { demo, walkthrough }
