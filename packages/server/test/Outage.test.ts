/**
 * A server that is down, or stopping, while clients follow turns over `HttpTransport` (issue 35, point 7), with real
 * server processes on 127.0.0.1: the first request of `Turn.result` and of `Turn.events` rides out a server that is
 * down when they start (connection refused), under the same schedule as the stream's reconnections.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Fiber, Layer, Redacted, Stream } from "effect"
import { HttpClient } from "effect/http"
import { locator } from "./fixtures/agents.js"
import { startServerProcess } from "./fixtures/processes.js"
import { keys, sqliteFile } from "./fixtures/servers.js"

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
