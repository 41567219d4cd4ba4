/**
 * The server's limits reach an `HttpTransport` caller as their own typed error, `LimitExceeded` (issue 35, point 7),
 * never as the `TransportFailure` a server that is down gets: over HTTP against a real server on 127.0.0.1, a message
 * over `maxMessageLength`, a body over `maxBodyBytes`, a session over `maxSessionsPerMinute` and a request over
 * `maxRequestsPerKey` each fail with `LimitExceeded` naming the limit, sent once and changing nothing. A server whose
 * own transport is an `HttpTransport` to a limited server passes such a refusal on as its own 413 / 429.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, ParleyError, Session, Turn } from "@parley/core"
import { RuntimeTools } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { createServer } from "node:http"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, serverKeys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** A server on SQLite with `limits`, whose model asks for the client's location then answers. */
const limitedServer = (
  limits: Partial<ParleyServer.Options>,
  think: Parameters<typeof ScriptedModel.fromFunction>[0] = brain
) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(think)
    return yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
      runtimeTools: [],
      server: { agents: [locator.spec], ...limits }
    })
  })

const over = (url: string) => HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) })

/** The error `effect` fails with, which must be a `LimitExceeded`. */
const limitOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(effect)
    assert.instanceOf(error, ParleyError.LimitExceeded, String(error))
    return error as ParleyError.LimitExceeded
  })

/** How many turns the session has: what a refused send must leave unchanged. */
const turnsOf = (url: string, sessionId: string) =>
  Effect.map(
    request(`${url}/sessions/${sessionId}/events?live=false`, { key: keys.alice }),
    (reply) => reply.text.split("\n").filter((line) => line === "event: TurnQueued").length
  )

describe("the server's limits, typed over HttpTransport", () => {
  it.effect(
    "a message over maxMessageLength, and a body over maxBodyBytes: LimitExceeded, nothing queued",
    () =>
      Effect.gen(function*() {
        const url = yield* limitedServer({ maxMessageLength: 50, maxBodyBytes: 4_096 })
        yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(locator)
          const long = yield* limitOf(Session.sendMessage(session, "x".repeat(51)))
          assert.strictEqual(long.limit, "messageLength")
          assert.strictEqual(long.max, 50)
          assert.strictEqual(long.retryAfter, undefined)
          assert.strictEqual(long.method, "sendMessage")
          assert.match(long.message, /HttpTransport\.sendMessage: over the server's limit of 50 characters per message/)
          const huge = yield* limitOf(Session.sendMessage(session, "y".repeat(8_000)))
          assert.strictEqual(huge.limit, "bodyBytes")
          assert.strictEqual(huge.max, 4_096)
          assert.strictEqual(yield* turnsOf(url, session.id), 0, "nothing was queued")
          // The same session goes on within the limits.
          const turn = yield* Session.sendMessage(session, "Where am I?")
          const blocked = yield* Turn.result(turn).pipe(Effect.provide(CallbackHandler.layer({})))
          assert.strictEqual(blocked._tag, "Blocked")
          // An answer over the body limit is refused the same way; the callback stays open.
          if (blocked._tag !== "Blocked") return
          const callback = blocked.callbacks[0]
          yield* Turn.answer(turn, callback.id, { _tag: "AllowApproval" })
          const next = yield* Turn.result(turn).pipe(Effect.provide(CallbackHandler.layer({})))
          assert.strictEqual(next._tag, "Blocked")
          if (next._tag !== "Blocked") return
          const tool = next.callbacks[0]
          assert.strictEqual(tool.kind, "client_tool")
          const big = yield* limitOf(
            Turn.answer(turn, tool.id, Answer.ClientToolResult.success({ city: "z".repeat(8_000) }))
          )
          assert.strictEqual(big.limit, "bodyBytes")
          assert.strictEqual(big.method, "answer")
          const still = yield* Turn.openCallbacks(turn)
          assert.deepStrictEqual(still.map((open) => open.id), [tool.id])
        }).pipe(Effect.provide(over(url)))
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "a session over maxSessionsPerMinute: LimitExceeded with retryAfter; no session made",
    () =>
      Effect.gen(function*() {
        const url = yield* limitedServer({ maxSessionsPerMinute: 2 })
        yield* Effect.gen(function*() {
          yield* Agent.startSession(locator)
          yield* Agent.startSession(locator)
          const third = yield* limitOf(Agent.startSession(locator))
          assert.strictEqual(third.limit, "sessionsPerMinute")
          assert.strictEqual(third.max, 2)
          assert.isAbove(third.retryAfter ?? 0, 0)
          assert.isAtMost(third.retryAfter ?? 0, 60)
        }).pipe(Effect.provide(over(url)))
        const listed = yield* request(`${url}/sessions`, { key: keys.alice })
        assert.strictEqual((listed.json as { sessions: ReadonlyArray<unknown> }).sessions.length, 2)
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a request over maxRequestsPerKey: LimitExceeded requestsInFlight, retryAfter 1",
    () =>
      Effect.gen(function*() {
        // A model that never answers: long polls on its turn hold the key's slots.
        const url = yield* limitedServer({ maxRequestsPerKey: 2 }, () => Effect.never)
        const controller = new AbortController()
        yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
        yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(locator)
          const turn = yield* Session.sendMessage(session, "Where am I?")
          const wait = `${url}/sessions/${session.id}/turns/${turn.turnId}/wait?timeout=60`
          const polls = [1, 2].map(() =>
            fetch(wait, { headers: { authorization: `Bearer ${keys.alice}` }, signal: controller.signal }).then(
              (response) => response.status,
              (error) => String(error)
            )
          )
          // Once the server holds both polls, the next request of the key is refused.
          for (let attempt = 0; attempt < 400; attempt++) {
            const outcome = yield* Effect.result(Turn.openCallbacks(turn))
            if (outcome._tag === "Failure") {
              assert.instanceOf(outcome.failure, ParleyError.LimitExceeded, String(outcome.failure))
              const error = outcome.failure as ParleyError.LimitExceeded
              assert.strictEqual(error.limit, "requestsInFlight")
              assert.strictEqual(error.max, 2)
              assert.strictEqual(error.retryAfter, 1)
              return
            }
            yield* Effect.sleep("25 millis")
          }
          assert.fail(`no request was ever refused (the polls: ${yield* Effect.promise(() => Promise.all(polls))})`)
        }).pipe(Effect.provide(over(url)))
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "a server in front of a limited server passes its refusals on: 413 and 429, typed again by its client",
    () =>
      Effect.gen(function*() {
        const behind = yield* limitedServer({ maxMessageLength: 50, maxSessionsPerMinute: 1 })
        const database = sqliteDatabase(yield* sqliteFile)
        // The front server's engine is an `HttpTransport` to the one behind.
        const front = ParleyServer.layer({ keys: serverKeys, log: false, acceptDefinitions: true }).pipe(
          Layer.provide([
            over(behind),
            RuntimeTools.layer(),
            Layer.orDie(ParleyServer.layerSessionsSql.pipe(Layer.provide(Layer.orDie(database.sql))))
          ]),
          Layer.provideMerge(Layer.orDie(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })))
        )
        const address = Context.get(yield* Layer.build(front), HttpServer.HttpServer).address
        const url = "port" in address ? `http://127.0.0.1:${address.port}` : ""
        const sessionId = (yield* Agent.startSession(locator).pipe(Effect.provide(over(url)))).id
        const long = yield* request(`${url}/sessions/${sessionId}/turns`, {
          method: "POST",
          key: keys.alice,
          body: { input: "x".repeat(60) }
        })
        assert.strictEqual(long.status, 413)
        assert.deepStrictEqual(long.json, { _tag: "PayloadTooLarge", limit: 50 })
        const second = yield* request(`${url}/sessions`, { method: "POST", key: keys.alice, body: { name: "locator" } })
        assert.strictEqual(second.status, 429)
        assert.strictEqual((second.json as { _tag: string; what: string })._tag, "TooManyRequests")
        assert.strictEqual((second.json as { what: string }).what, "sessions")
        assert.isDefined(second.headers["retry-after"])
        // Its own client reads them as `LimitExceeded` again.
        const again = yield* limitOf(Agent.startSession(locator).pipe(Effect.provide(over(url))))
        assert.strictEqual(again.limit, "sessionsPerMinute")
      }),
    { timeout: 120_000 }
  )
})
