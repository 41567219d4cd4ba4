import { HttpServer } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { ClusterServer } from "@parley/cluster"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Redacted } from "effect"
import { freePorts, pgSchema } from "./databases.js"
import { brain, lookupPrice, pricer } from "./fixtures/pricing.js"
import { shardingConfig } from "./runners.js"

// `ClusterServer.layerPg` (what `parley serve --cluster` runs): two servers of one cluster on PostgreSQL; a session
// started through one is answered and read through the other.

const key = "acme-key-0123456789"

describe("ClusterServer.layerPg", () => {
  it.live("two servers of one cluster serve the same sessions", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const model = yield* ScriptedModel.fromFunction(brain)
      const tool = lookupPrice({ took: "10 millis", note: () => undefined })
      const runnerPorts = yield* freePorts(2)
      const urls: Array<string> = []
      // One after another: the first makes the tables.
      for (const port of runnerPorts) {
        const server = ClusterServer.layerPg({
          keys: ParleyServer.parseKeys(`${key}:acme`),
          models: Models.single(model.languageModel),
          tools: [tool],
          log: false,
          url,
          port: 0,
          runner: { host: "127.0.0.1", port },
          shardingConfig
        })
        const address = Context.get(yield* Layer.build(Layer.orDie(server)), HttpServer.HttpServer).address
        urls.push(address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
      }
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
