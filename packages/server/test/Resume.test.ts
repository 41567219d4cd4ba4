/**
 * Resumable event streams: connections dropped mid-turn (the server closes them; the network breaks; the client
 * aborts its own) and a server killed with `SIGKILL` while a turn is blocked. `Turn.events` and `Turn.result` go on
 * with no gap and no duplicate.
 */
import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent } from "@parley/core"
import { Agent, Answer, CallbackHandler, Inbox, Session, Transport, Turn } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Fiber, Layer, Redacted, Schedule, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { locator } from "./fixtures/agents.js"
import { startServerProcess } from "./fixtures/processes.js"
import { startProxy } from "./fixtures/proxy.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

/** Asks for `get_location` `calls` times (each behind an approval), then answers. */
const loopBrain = (calls: number) => (call: ScriptedModel.Call): ScriptedModel.Reply =>
  ScriptedModel.toolResults(call).length < calls
    ? ScriptedModel.toolCall("get_location", {})
    : ScriptedModel.text(`Located ${calls} times.`)

const fast = Schedule.min([Schedule.exponential("10 millis"), Schedule.spaced("200 millis")])

const transportAt = (url: string, transformClient?: (client: HttpClient.HttpClient) => HttpClient.HttpClient) =>
  HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice), reconnect: fast, transformClient })

/** Answers every callback of the turn from its events, by id; gives the events read. */
const driveByHand = (turn: Turn.Turn) =>
  Turn.events(turn).pipe(
    Stream.tap((event) => {
      if (event._tag !== "CallbackOpened") return Effect.void
      const answer = event.callback.kind === "approval"
        ? new Answer.AllowApproval()
        : Answer.ClientToolResult.success({ city: "Lyon" })
      return Turn.answer(turn, event.callback.id, answer)
    }),
    Stream.runCollect
  )

const handlers = CallbackHandler.layer({
  approval: () => Effect.succeed(new Answer.AllowApproval()),
  clientTool: () => Effect.succeed(Answer.ClientToolResult.success({ city: "Lyon" }))
})

const stored = (events: ReadonlyArray<TurnEvent.TurnEvent>) =>
  events.filter((event) => event._tag !== "MessageDelta").map((event) => `${event.seq}:${event._tag}`)

/** The turn's stored events as the server has them (a fresh connection, after the fact). */
const logOf = (turn: Turn.Turn) =>
  Effect.flatMap(Transport.Transport, (transport) =>
    transport.events(turn.sessionId, turn.cursor).pipe(
      Stream.filter((event) => event._tag !== "MessageDelta"),
      Stream.takeUntil((event) => event._tag === "TurnEnded"),
      Stream.runCollect,
      Effect.map((events) => stored(events))
    ))

const assertGapless = (seen: ReadonlyArray<string>, log: ReadonlyArray<string>) => {
  assert.deepStrictEqual(seen, log, "the events read are the log: no gap, no duplicate")
  const seqs = seen.map((entry) => Number(entry.split(":")[0]))
  for (let i = 1; i < seqs.length; i++) assert.strictEqual(seqs[i], seqs[i - 1] + 1, `gap after seq ${seqs[i - 1]}`)
  assert.isTrue(seen[seen.length - 1]?.endsWith("TurnEnded"))
}

describe("HttpTransport: dropped event streams", () => {
  for (const how of ["end", "reset"] as const) {
    it.live(
      `the server side drops the stream mid-turn (${how}): Turn.events goes on with no gap, no duplicate`,
      () =>
        Effect.gen(function*() {
          const model = yield* ScriptedModel.fromFunction(loopBrain(12))
          const base = yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
            runtimeTools: []
          })
          const proxy = yield* startProxy(base)
          let cuts = 0
          const cutter = yield* Effect.forkScoped(
            Effect.repeat(
              Effect.flatMap(proxy.cut(how), (n) => Effect.sync(() => (cuts += n))),
              Schedule.spaced("15 millis")
            )
          )
          const { log, seen } = yield* Effect.gen(function*() {
            const session = yield* Agent.startSession(locator)
            const turn = yield* Session.sendMessage(session, "Where am I, twelve times?")
            const seen = stored(yield* driveByHand(turn))
            yield* Fiber.interrupt(cutter)
            return { seen, log: yield* logOf(turn) }
          }).pipe(Effect.provide(transportAt(proxy.url)))
          assert.isAbove(cuts, 0, "some streams were cut")
          assertGapless(seen, log)
          assert.strictEqual(seen.filter((entry) => entry.endsWith("CallbackOpened")).length, 24)
        }),
      { timeout: 90_000 }
    ) // 24 callbacks through a proxy that cuts every 15 ms: slow on a loaded machine
  }

  it.live(
    "the client aborts its own stream every few chunks: Turn.events and Turn.result go on",
    () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.fromFunction(loopBrain(8))
        const base = yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
          runtimeTools: []
        })
        let aborts = 0
        // Every event-stream response stops being read after 3 chunks: the client closes the connection.
        const abortEarly = HttpClient.transformResponse(
          Effect.map((response: HttpClientResponse.HttpClientResponse) =>
            response.headers["content-type"]?.startsWith("text/event-stream") === true
              ? HttpClientResponse.fromWeb(
                response.request,
                new Response(
                  Stream.toReadableStream(
                    response.stream.pipe(Stream.take(3), Stream.ensuring(Effect.sync(() => (aborts += 1))))
                  ),
                  { status: response.status, headers: response.headers as Record<string, string> }
                )
              )
              : response
          )
        )
        const { log, result, seen } = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(locator)
          const turn = yield* Session.sendMessage(session, "Where am I, eight times?")
          // The handlers answer while Turn.result waits; Turn.events only reads.
          const reader = yield* Effect.forkChild(Turn.events(turn).pipe(Stream.runCollect))
          const result = yield* Turn.result(turn).pipe(Effect.provide(handlers))
          const seen = stored(yield* Fiber.join(reader))
          return { seen, log: yield* logOf(turn), result }
        }).pipe(Effect.provide(transportAt(base, abortEarly)))
        assert.isAbove(aborts, 3)
        assertGapless(seen, log)
        assert.strictEqual(result._tag, "Completed")
      }),
    { timeout: 90_000 }
  )
})

describe("HttpTransport: a server killed mid-turn", () => {
  it.live(
    "SIGKILL with a turn blocked; restarted on the same file: the client reconnects and the turn completes",
    () =>
      Effect.gen(function*() {
        const filename = yield* Effect.orDie(sqliteFile)
        const first = yield* startServerProcess({ filename, port: 0, owner: "server-a" })
        const transport = Layer.fresh(transportAt(first.url))
        const context = yield* Layer.build(transport)
        const session = yield* Agent.startSession(locator).pipe(Effect.provide(context))
        const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(context))
        const reader = yield* Effect.forkChild(Turn.events(turn).pipe(Stream.runCollect, Effect.provide(context)))
        const blocked = yield* Turn.result(turn).pipe(Effect.provide(context))
        assert.strictEqual(blocked._tag, "Blocked")
        yield* first.kill
        const second = yield* startServerProcess({ filename, port: first.port, owner: "server-a" })
        assert.strictEqual(second.url, first.url)
        // The callback is still open, on the restarted server.
        const open = yield* Inbox.listOpen().pipe(Effect.provide(context))
        assert.deepStrictEqual(
          open.map((entry) => entry.callback.id),
          blocked._tag === "Blocked" ? blocked.callbacks.map((c) => c.id) : []
        )
        yield* Inbox.answer(open[0], new Answer.AllowApproval()).pipe(Effect.provide(context))
        let state = yield* Turn.result(turn, { after: blocked._tag === "Blocked" ? blocked : undefined }).pipe(
          Effect.provide(context)
        )
        assert.strictEqual(state._tag, "Blocked")
        if (state._tag === "Blocked") {
          yield* Turn.answer(turn, state.callbacks[0].id, Answer.ClientToolResult.success({ city: "Lyon" })).pipe(
            Effect.provide(context)
          )
          state = yield* Turn.result(turn, { after: state }).pipe(Effect.provide(context))
        }
        assert.strictEqual(state._tag, "Completed")
        const seen = stored(yield* Fiber.join(reader))
        assertGapless(seen, yield* logOf(turn).pipe(Effect.provide(context)))
      }),
    { timeout: 120_000 }
  )

  it.live(
    "SIGTERM: the server closes its streams and exits; another server takes the tree at once and the turn completes",
    () =>
      Effect.gen(function*() {
        const filename = yield* Effect.orDie(sqliteFile)
        const first = yield* startServerProcess({ filename, port: 0, owner: "server-a" })
        const context = yield* Layer.build(Layer.fresh(transportAt(first.url)))
        const session = yield* Agent.startSession(locator).pipe(Effect.provide(context))
        const turn = yield* Session.sendMessage(session, "Where am I?").pipe(Effect.provide(context))
        const reader = yield* Effect.forkChild(Turn.events(turn).pipe(Stream.runCollect, Effect.provide(context)))
        const blocked = yield* Turn.result(turn).pipe(Effect.provide(context))
        assert.strictEqual(blocked._tag, "Blocked")
        const started = Date.now()
        yield* first.stop.pipe(Effect.timeout("20 seconds"), Effect.ignore)
        assert.isBelow(Date.now() - started, 10_000, "the server stops at once, open streams included")
        // Another owner: it takes the tree at once only if the first released its lease.
        yield* startServerProcess({ filename, port: first.port, owner: "server-b" })
        const state = yield* Turn.result(turn, { after: blocked._tag === "Blocked" ? blocked : undefined }).pipe(
          Effect.provide(handlers),
          Effect.provide(context),
          Effect.timeout("15 seconds")
        )
        assert.strictEqual(state._tag, "Completed")
        const seen = stored(yield* Fiber.join(reader))
        assertGapless(seen, yield* logOf(turn).pipe(Effect.provide(context)))
      }),
    { timeout: 120_000 }
  )
})
