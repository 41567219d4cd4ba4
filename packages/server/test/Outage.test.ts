/**
 * A server that is down, or stopping, while clients follow turns over `HttpTransport` (issue 35, point 7), with real
 * server processes on 127.0.0.1: the first request of `Turn.result` and of `Turn.events` rides out a server that is
 * down when they start (connection refused), under the same schedule as the stream's reconnections; a server told to
 * stop (SIGTERM) while clients follow turns, with a request in flight that never ends, answers the clients'
 * reconnections with its 503 while it drains and exits within its bound (`shutdownTimeout`, 5 s by default), and the
 * clients carry on with the next server.
 */
import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Exit, Fiber, Layer, Redacted, Schema, Scope, Stream } from "effect"
import { HttpClient } from "effect/http"
import * as Http from "node:http"
import { locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { startServerProcess } from "./fixtures/processes.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const handlers = CallbackHandler.layer({
  approval: () => Effect.succeed(new Answer.AllowApproval()),
  clientTool: () => Effect.succeed(Answer.ClientToolResult.success({ city: "Lyon" }))
})

/** Requests the client sent that found no server (their connection refused, reset or timed out). */
const unreachable = () => {
  let count = 0
  return {
    count: () => count,
    transformClient: (client: HttpClient.HttpClient) =>
      HttpClient.tapError(client, (error) =>
        Effect.sync(() => {
          if (error.reason._tag === "TransportError") count += 1
        }))
  }
}

/** Waits (in real time) until `done()`, failing after `seconds`. */
const until = (what: string, done: () => boolean, seconds = 60) =>
  Effect.gen(function*() {
    const deadline = Date.now() + seconds * 1000
    while (!done()) {
      if (Date.now() > deadline) return assert.fail(`${what}: not after ${seconds} s`)
      yield* Effect.sleep("20 millis")
    }
  })

describe("HttpTransport: a server that is down when a turn is followed", () => {
  it.live(
    "Turn.result and Turn.events started while the server is down: they wait for it, and the turn completes",
    () =>
      Effect.gen(function*() {
        const filename = yield* Effect.orDie(sqliteFile)
        const first = yield* startServerProcess({ filename, port: 0, owner: "server-a" })
        const refused = unreachable()
        // The default options: the first requests wait under the same schedule as the reconnections.
        const context = yield* Layer.build(Layer.fresh(HttpTransport.layer({
          url: first.url,
          apiKey: Redacted.make(keys.alice),
          transformClient: refused.transformClient
        })))
        const session = yield* Agent.startSession(locator).pipe(Effect.provide(context))
        const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(context))
        yield* first.kill
        const result = yield* Effect.forkChild(
          Turn.result(turn).pipe(Effect.provide(handlers), Effect.provide(context))
        )
        const events = yield* Effect.forkChild(
          Turn.events(turn).pipe(
            Stream.filter((event) => event._tag !== "MessageDelta"),
            Stream.map((event) => event._tag),
            Stream.runCollect,
            Effect.provide(context)
          )
        )
        // Both found the server down, more than once each, and neither gave up.
        yield* until("four refused requests", () => refused.count() >= 4)
        assert.isUndefined(result.pollUnsafe(), "Turn.result is still waiting")
        assert.isUndefined(events.pollUnsafe(), "Turn.events is still waiting")
        yield* startServerProcess({ filename, port: first.port, owner: "server-a" })
        const state = yield* Fiber.join(result)
        assert.strictEqual(state._tag, "Completed")
        if (state._tag === "Completed") assert.strictEqual(state.text, "You are in Lyon.")
        const read = yield* Fiber.join(events)
        assert.strictEqual(read[0], "TurnQueued")
        assert.strictEqual(read[read.length - 1], "TurnEnded")
      }),
    { timeout: 180_000 }
  )
})

/** A POST whose body never comes: its headers promise 100 bytes, it sends 9. */
const stalledUpload = (url: string) =>
  Effect.sync(() => {
    const target = new URL(url)
    const outcome: { ended?: string } = {}
    const stalled = Http.request({
      host: target.hostname,
      port: target.port,
      method: "POST",
      path: "/sessions",
      headers: { authorization: `Bearer ${keys.alice}`, "content-type": "application/json", "content-length": "100" }
    }, (response) => void (outcome.ended = `answered ${response.statusCode}`))
    stalled.on("error", (error) => void (outcome.ended = error.message))
    stalled.write("{\"name\":")
    return outcome
  })

describe("HttpTransport: a server that stops while clients follow turns", () => {
  it.live(
    "SIGTERM: reconnections get the 503 while it drains, it exits within its bound, the clients go on with the next one",
    () =>
      Effect.gen(function*() {
        const filename = yield* Effect.orDie(sqliteFile)
        const first = yield* startServerProcess({ filename, port: 0, owner: "server-a" })
        const statuses: Array<number> = []
        let stopping = false
        const context = yield* Layer.build(Layer.fresh(HttpTransport.layer({
          url: first.url,
          apiKey: Redacted.make(keys.alice),
          transformClient: (client) =>
            HttpClient.tap(client, (response) =>
              Effect.sync(() => {
                if (stopping) statuses.push(response.status)
              }))
        })))
        // Five turns blocked on their approvals, each followed by a `Turn.events` reader (an open stream).
        const turns: Array<{ readonly turn: Turn.Turn; readonly blocked: TurnState.Blocked }> = []
        for (let i = 0; i < 5; i++) {
          const session = yield* Agent.startSession(locator).pipe(Effect.provide(context))
          const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(context))
          const blocked = yield* Turn.result(turn).pipe(
            Effect.provide(CallbackHandler.layer({})),
            Effect.provide(context)
          )
          assert.strictEqual(blocked._tag, "Blocked")
          turns.push({ turn, blocked: blocked as TurnState.Blocked })
        }
        const readers = yield* Effect.forEach(turns, ({ turn }) =>
          Effect.forkChild(
            Turn.events(turn).pipe(
              Stream.filter((event) => event._tag !== "MessageDelta"),
              Stream.map((event) => event._tag),
              Stream.runCollect,
              Effect.provide(context)
            )
          ))
        // A request in flight that never ends: the server waits for it, at most its shutdownTimeout.
        const upload = yield* stalledUpload(first.url)
        yield* Effect.sleep("500 millis")
        stopping = true
        const started = Date.now()
        const stopped = yield* Effect.forkChild(first.stop)
        // While it drains, a request gets the documented 503: a TransportFailure, the connection closed.
        yield* until("a 503 to a reconnection", () => statuses.includes(503), 30)
        const asked = Date.now()
        const refused = yield* Effect.exit(
          request(`${first.url}/sessions/${turns[0].turn.sessionId}`, { key: keys.alice })
        )
        if (Exit.isSuccess(refused)) {
          assert.strictEqual(refused.value.status, 503, refused.value.text)
          assert.strictEqual((refused.value.json as { _tag: string })._tag, "TransportFailure", refused.value.text)
        } else {
          // Refused: only once the drain is over (a machine so slow that it got there so late).
          assert.isAtLeast(asked - started, 4_500, "a connection refused while the server drains")
        }
        yield* Fiber.join(stopped)
        const took = Date.now() - started
        // The bound is 5 s (shutdownTimeout) and the engine's own stop; generous for a loaded machine, far below a
        // hang (before, the request that never ends held the server forever).
        assert.isBelow(took, 30_000, `the server exited after ${took} ms`)
        assert.isDefined(upload.ended, "the request that never ended was cut")
        // The clients never failed: they go on with the next server, and each turn completes.
        for (const reader of readers) assert.isUndefined(reader.pollUnsafe(), "a reader still follows its turn")
        yield* startServerProcess({ filename, port: first.port, owner: "server-a" })
        for (const { blocked, turn } of turns) {
          const state = yield* Turn.result(turn, { after: blocked }).pipe(
            Effect.provide(handlers),
            Effect.provide(context)
          )
          assert.strictEqual(state._tag, "Completed")
        }
        for (const reader of readers) {
          const read = yield* Fiber.join(reader)
          assert.strictEqual(read[read.length - 1], "TurnEnded")
        }
      }),
    { timeout: 240_000 }
  )
})

describe("ParleyServer.layer: a long-poll when the server stops", () => {
  it.live(
    "a wait in flight answers at once with the turn as it stands, and the stop does not wait for its timeout",
    () =>
      Effect.gen(function*() {
        // A tool the runtime runs that never returns: the turn runs as long as the server.
        const stall = Tool.make(
          "stall",
          { description: "Never returns.", parameters: {}, success: Schema.String },
          () => Effect.never
        )
        const staller = Agent.make({ name: "staller", model: "scripted", tools: [stall], permissionMode: "allow" })
        const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.toolCall("stall", {}))
        const scope = yield* Scope.make()
        const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
          runtimeTools: [stall]
        }).pipe(Scope.provide(scope))
        const transport = HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) })
        const turn = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(staller)
          const turn = yield* Session.sendMessage(session, "Stall.")
          // The tool runs.
          yield* Turn.events(turn).pipe(
            Stream.takeUntil((event) => event._tag === "ToolExecutionStarted"),
            Stream.runDrain
          )
          return turn
        }).pipe(Effect.provide(transport))
        const wait = yield* Effect.forkChild(
          request(`${url}/sessions/${turn.sessionId}/turns/${turn.turnId}/wait?timeout=60`, { key: keys.alice })
        )
        yield* Effect.sleep("300 millis")
        assert.isUndefined(wait.pollUnsafe(), "the wait is in flight")
        const started = Date.now()
        yield* Scope.close(scope, Exit.void)
        const answered = yield* Fiber.join(wait)
        assert.strictEqual(answered.status, 200, answered.text)
        // The turn as it stands: still running, no state yet.
        assert.isTrue((answered.json as { state?: unknown }).state == null, answered.text)
        // Not its 60 s: generous for a loaded machine.
        assert.isBelow(Date.now() - started, 30_000)
      }),
    { timeout: 120_000 }
  )
})
