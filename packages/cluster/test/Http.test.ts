import { NodeHttpServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Redacted } from "effect"
import { Sharding } from "effect/cluster"
import { HttpServer } from "effect/http"
import { createServer } from "node:http"
import { pgSchema } from "./databases.js"
import { brain, lookupPrice, pricer } from "./fixtures/pricing.js"
import { runners } from "./runners.js"

// Three runners on PostgreSQL, each serving Parley's HTTP API (`ParleyServer.layer` over the runner's `Transport`):
// sessions started through one server, their approvals answered through the others, read through a third. The
// server is unchanged: the cluster's `Transport` takes the engine's place.

const key = "alice-key-0123456789"
const SESSIONS = 12

describe("ClusterRuntime.layerSocket under ParleyServer: three runners over HTTP", () => {
  it.live(
    "sessions started through one runner's server are answered through the others'",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const model = yield* ScriptedModel.fromFunction(brain)
        const tool = lookupPrice({ took: "10 millis", note: () => undefined })
        const contexts = yield* runners({ url, count: 3, model: model.languageModel, runtimeTools: [tool] })
        // One server per runner, one after another (the first makes the tenants' table).
        const urls: Array<string> = []
        for (const context of contexts) {
          const server = ParleyServer.layer({
            keys: [{ key: Redacted.make(key), tenant: "alice" }],
            log: false,
            acceptDefinitions: true
          }).pipe(
            Layer.provide([
              Layer.succeedContext(context),
              Layer.orDie(
                ParleyServer.layerSessionsSql.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url) })))
              )
            ]),
            Layer.provideMerge(Layer.orDie(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })))
          )
          const address = Context.get(yield* Layer.build(server), HttpServer.HttpServer).address
          urls.push(address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${address.port}`)
        }
        const through = (i: number) => Effect.provide(HttpTransport.layer({ url: urls[i], apiKey: Redacted.make(key) }))

        const agent = pricer(tool)
        const turns = yield* Effect.forEach(
          Array.from({ length: SESSIONS }, (_, i) => `product-${i}`),
          (product) =>
            Effect.gen(function*() {
              const session = yield* Agent.startSession(agent)
              const turn = yield* Session.sendMessage(session, `Price ${product} please.`)
              const state = yield* Turn.result(turn)
              assert.strictEqual(state._tag, "Blocked", `${product}: ${state._tag}`)
              return { product, turn, blocked: state as TurnState.Blocked }
            }).pipe(through(0)),
          { concurrency: 6 }
        )
        const held = yield* Effect.forEach(
          contexts,
          (context) => Context.get(context, Sharding.Sharding).activeEntityCount
        )
        assert.isAtLeast(held.filter((count) => count > 0).length, 2, `trees per runner: ${held.join(", ")}`)
        // Answered through the second and third servers in turn, whichever runner holds the tree.
        yield* Effect.forEach(
          turns,
          ({ blocked, turn }, i) =>
            Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()).pipe(through(1 + (i % 2))),
          { concurrency: 6, discard: true }
        )
        for (const { product, turn } of turns) {
          const state = yield* Turn.result(turn).pipe(through(2))
          assert.strictEqual(state._tag === "Completed" ? state.text : state._tag, `${product} costs 1,200 EUR.`)
        }
      }).pipe(Effect.scoped),
    120_000
  )
})
