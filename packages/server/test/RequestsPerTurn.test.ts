/**
 * What one turn of the approval loop costs in requests over HTTP (`HttpTransport` against a real server): the session
 * created, the message sent, the turn's state, its event stream, the two answers — and no snapshot to confirm a
 * `TurnBlocked` whose callbacks this wait's handlers answered themselves. A callback left open still ends the wait as
 * `Blocked`, confirmed with the server. The JSON requests share kept-alive connections, and the server does not look up
 * the root of a session it just created.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Transport } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpClient, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { brain, locator } from "./fixtures/agents.js"
import { startProxy } from "./fixtures/proxy.js"
import { keys, serverKeys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** The requests a client sent, as `METHOD route` (ids replaced by their kind). */
const recorder = () => {
  const sent: Array<string> = []
  const transformClient = HttpClient.tapRequest((request) =>
    Effect.sync(() => {
      // `HttpApiClient` adds its base URL after this client's transforms: the URL may be a bare path here.
      const path = (request.url.split("?")[0] ?? "").replace(/^https?:\/\/[^/]+/, "")
        .replace(/\/ses_[^/]+/g, "/:session")
        .replace(/\/turn_[^/]+/g, "/:turn")
        .replace(/\/cb_[^/]+/g, "/:callback")
      sent.push(`${request.method} ${path}`)
    })
  )
  return { sent, transformClient }
}

const answerAll = CallbackHandler.layer({
  approval: () => Effect.succeed(new Answer.AllowApproval()),
  clientTool: () => Effect.succeed(Answer.ClientToolResult.success({ city: "Lyon" }))
})

describe("requests per turn", () => {
  it.effect("the approval loop: six requests, none to confirm a Blocked its own handlers answered", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain)
      const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, { runtimeTools: [] })
      const { sent, transformClient } = recorder()
      const transport = HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice), transformClient })
      for (let i = 0; i < 3; i++) {
        sent.length = 0
        const state = yield* Agent.run(locator, "Where am I?").pipe(
          Effect.provide(answerAll),
          Effect.provide(transport)
        )
        assert.isTrue(state._tag === "Completed" && state.text === "You are in Lyon.")
        assert.deepStrictEqual([...sent].sort(), [
          "GET /sessions/:session/events",
          "GET /sessions/:session/turns/:turn",
          "POST /sessions",
          "POST /sessions/:session/turns",
          "POST /sessions/:session/turns/:turn/callbacks/:callback/answer",
          "POST /sessions/:session/turns/:turn/callbacks/:callback/answer"
        ])
      }
    }))

  it.effect("a callback the handlers keep open: Blocked, confirmed with one more snapshot", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain)
      const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, { runtimeTools: [] })
      const { sent, transformClient } = recorder()
      const transport = HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice), transformClient })
      // The approval is answered, the tool's call is left open.
      const approveOnly = CallbackHandler.layer({ approval: () => Effect.succeed(new Answer.AllowApproval()) })
      const state = yield* Agent.run(locator, "Where am I?").pipe(
        Effect.provide(approveOnly),
        Effect.provide(transport)
      )
      assert.strictEqual(state._tag, "Blocked")
      assert.isTrue(
        state._tag === "Blocked" && state.callbacks.length === 1 && state.callbacks[0].kind === "client_tool"
      )
      const snapshots = sent.filter((line) => line === "GET /sessions/:session/turns/:turn")
      assert.strictEqual(snapshots.length, 2)
      assert.strictEqual(sent.filter((line) => line.endsWith("/answer")).length, 1)
    }))

  it.effect("the JSON requests of many turns share kept-alive connections; each event stream has its own", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain)
      const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, { runtimeTools: [] })
      const proxy = yield* startProxy(url)
      const { sent, transformClient } = recorder()
      yield* Effect.gen(function*() {
        const transport = yield* Transport.Transport
        const session = yield* Agent.startSession(locator)
        for (let i = 0; i < 20; i++) yield* transport.getSession(session.id)
        // Kept alive: no connection per request. (`fetch` hands the next request to a second connection while the
        // first one finishes its response, then takes turns between the two.)
        assert.isAtMost(yield* proxy.connections, 2)
        for (let i = 0; i < 3; i++) yield* Agent.run(locator, "Where am I?").pipe(Effect.provide(answerAll))
      }).pipe(
        Effect.provide(HttpTransport.layer({ url: proxy.url, apiKey: Redacted.make(keys.alice), transformClient }))
      )
      const streams = sent.filter((line) => line.endsWith("/events")).length
      assert.strictEqual(streams, 3)
      // The JSON requests of the three turns came on the kept-alive connections: one more connection per event stream
      // (each ends with its turn) and no other.
      assert.isAtMost(yield* proxy.connections, 2 + streams)
    }))

  it.effect("the server does not look up the root of a session it just created", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(brain)
      const database = sqliteDatabase(yield* sqliteFile)
      const engine = LocalTransport.layer.pipe(Layer.provide([
        Layer.orDie(database.store),
        Connectors.layer([]),
        RuntimeTools.layer(),
        Models.layer(Models.single(model.languageModel))
      ]))
      // The engine as the server sees it, counting its `getSession`s.
      let lookups = 0
      const counted = Layer.effect(
        Transport.Transport,
        Effect.map(Transport.Transport, (inner) => ({
          ...inner,
          getSession: (sessionId: Parameters<typeof inner.getSession>[0]) => {
            lookups += 1
            return inner.getSession(sessionId)
          }
        }))
      ).pipe(Layer.provide(engine))
      const server = ParleyServer.layer({ keys: serverKeys, log: false, acceptDefinitions: true }).pipe(
        Layer.provide([
          counted,
          Layer.orDie(ParleyServer.layerSessionsSql.pipe(Layer.provide(Layer.orDie(database.sql))))
        ]),
        Layer.provideMerge(Layer.orDie(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })))
      )
      const address = Context.get(yield* Layer.build(server), HttpServer.HttpServer).address
      const url = "port" in address ? `http://127.0.0.1:${address.port}` : ""
      const state = yield* Agent.run(locator, "Where am I?").pipe(
        Effect.provide(answerAll),
        Effect.provide(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) }))
      )
      assert.strictEqual(state._tag, "Completed")
      assert.strictEqual(lookups, 0)
    }))
})
