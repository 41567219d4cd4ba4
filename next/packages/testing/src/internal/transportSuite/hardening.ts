/**
 * The engine's failures listed in issue 8 ("Why"), as a user of the client API sees them: a defect in a model ends
 * the turn `Failed` (never a hang), a turn is found as soon as `sendMessage` returns (a queued one too), `Turn.result`
 * hands handlers only the callbacks still open (once, concurrently, never held by a handler whose callback closed),
 * malformed answers from another process are typed errors that change nothing, a turn of an earlier turn cannot
 * answer a later turn's own callback, `fromWaitingTurn` follows who started a subagent, and a tree's log shows its
 * children end before the root's turn does and the answers given while the root is idle.
 *
 * Every wait is bounded in real time (`within`): a hang fails the scenario within seconds, whatever the `TestClock`.
 */
import { describe } from "@effect/vitest"
import { answerers } from "./hardening/answerers.js"
import { failures } from "./hardening/failures.js"
import { handlers } from "./hardening/handlers.js"
import { malformed } from "./hardening/malformed.js"
import type { WithModel } from "./harness.js"

export const hardening = (withModel: WithModel) =>
  describe("hardening (issue 8)", () => {
    failures(withModel)
    handlers(withModel)
    malformed(withModel)
    answerers(withModel)
  })
