import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { pricer } from "./fixtures/pricing.js"
import { clusterServers, key } from "./fixtures/servers.js"

// `ClusterServer.layerPg` (what `parley serve --cluster` runs): two servers of one cluster on PostgreSQL; a session
// started through one is answered and read through the other.

describe("ClusterServer.layerPg", () => {
  it.live("two servers of one cluster serve the same sessions", () =>
    Effect.gen(function*() {
      const { tool, urls } = yield* clusterServers(2)
      const through = (i: number) => Effect.provide(HttpTransport.layer({ url: urls[i], apiKey: Redacted.make(key) }))
      const agent = pricer(tool)
      const turns = yield* Effect.forEach(["atlas", "globe", "compass", "sextant"], (product) =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(agent)
          const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
          const state = yield* Turn.result(turn)
          assert.strictEqual(state._tag, "Blocked", `${product}: ${state._tag}`)
          return { product, turn, blocked: state as TurnState.Blocked }
        }).pipe(through(0)))
      for (const { blocked, product, turn } of turns) {
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()).pipe(through(1))
        const state = yield* Turn.result(turn, { after: blocked }).pipe(through(1))
        assert.strictEqual(state._tag === "Completed" ? state.text : state._tag, `${product} costs 1,200 EUR.`)
      }
    }).pipe(Effect.scoped), 120_000)
})
