/**
 * Servers in processes of their own: an approval left open by a program on `HttpTransport` and answered by another
 * client over plain HTTP (`fetch`, no Parley code); two servers on one PostgreSQL database serving one session set.
 */
import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent } from "@parley/core"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Layer, Redacted, Stream } from "effect"
import { locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { startServerProcess } from "./fixtures/processes.js"
import { keys, pgSchema, sqliteFile } from "./fixtures/servers.js"

const transportAt = (url: string) => Layer.fresh(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) }))

const answerLocation = CallbackHandler.layer({
  clientTool: () => Effect.succeed(Answer.ClientToolResult.success({ city: "Lyon" }))
})

const storedEvents = (events: ReadonlyArray<TurnEvent.TurnEvent>) =>
  events.filter((event) => event._tag !== "MessageDelta").map((event) => JSON.stringify(event))

describe("cross-process", () => {
  it.live(
    "an approval left open by an HttpTransport program is answered with plain fetch; Turn.result({ after }) completes",
    () =>
      Effect.gen(function*() {
        const server = yield* startServerProcess({ filename: yield* Effect.orDie(sqliteFile), port: 0, owner: "one" })
        const program = yield* Layer.build(transportAt(server.url))
        const blocked = yield* Agent.run(locator, "Where am I?").pipe(Effect.provide(program))
        assert.strictEqual(blocked._tag, "Blocked")
        if (blocked._tag !== "Blocked") return
        // Another client, in any language: list the open callbacks, answer one by id.
        const open = yield* request(`${server.url}/callbacks?kind=approval`, { key: keys.alice })
        const [entry] = open.json as Array<{ callback: { id: string; sessionId: string; turnId: string } }>
        assert.strictEqual(entry.callback.id, blocked.callbacks[0].id)
        const answered = yield* request(
          `${server.url}/sessions/${entry.callback.sessionId}/turns/${entry.callback.turnId}/callbacks/${entry.callback.id}/answer`,
          { method: "POST", key: keys.alice, body: { _tag: "AllowApproval" } }
        )
        assert.strictEqual(answered.status, 204, answered.text)
        const turn = yield* Agent.session(locator, blocked.sessionId).pipe(
          Effect.flatMap((session) => Session.turn(session, blocked.turnId)),
          Effect.provide(program)
        )
        const state = yield* Turn.result(turn, { after: blocked }).pipe(
          Effect.provide(answerLocation),
          Effect.provide(program)
        )
        assert.strictEqual(state._tag, "Completed")
        if (state._tag === "Completed") assert.strictEqual(state.text, "You are in Lyon.")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "two servers on one PostgreSQL: started on one, answered through the other, it completes; both stream the same log",
    () =>
      Effect.gen(function*() {
        const url = yield* Effect.orDie(pgSchema)
        const [first, second] = yield* Effect.all([
          startServerProcess({ url, port: 0, owner: "server-1" }),
          startServerProcess({ url, port: 0, owner: "server-2" })
        ], { concurrency: 2 })
        const one = yield* Layer.build(transportAt(first.url))
        const two = yield* Layer.build(transportAt(second.url))
        const session = yield* Agent.startSession(locator).pipe(Effect.provide(one))
        const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(one))
        const blocked = yield* Turn.result(turn).pipe(Effect.provide(one))
        assert.strictEqual(blocked._tag, "Blocked")
        if (blocked._tag !== "Blocked") return
        // The answer goes through the other server; the wait on the first one goes on.
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()).pipe(Effect.provide(two))
        const state = yield* Turn.result(turn, { after: blocked }).pipe(
          Effect.provide(CallbackHandler.layer({
            clientTool: () => Effect.succeed(Answer.ClientToolResult.success({ city: "Lyon" }))
          })),
          Effect.provide(one)
        )
        assert.strictEqual(state._tag, "Completed")
        const read = (context: typeof one) =>
          Turn.events(turn).pipe(
            Stream.runCollect,
            Effect.map((events) => storedEvents(events)),
            Effect.provide(context)
          )
        const [fromOne, fromTwo] = yield* Effect.all([read(one), read(two)], { concurrency: 2 })
        assert.isAbove(fromOne.length, 5)
        assert.deepStrictEqual(fromTwo, fromOne)
      }),
    { timeout: 120_000 }
  )
})
