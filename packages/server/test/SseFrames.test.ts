/**
 * The event stream's frames, both ends: the server writes a run of deltas from the first one's encoding (only the text
 * changes), the reader builds a delta that differs from the last one only in its text from that one's decoded fields.
 * Both must give exactly the events a full encode / decode gives: checked on the server's frames, on a hand-written
 * stream served by `node:http` (frames cut anywhere, a malformed delta, deltas whose time or step changes), and end to
 * end on a real server.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Session, Transport, TurnEvent, TurnState } from "@parley/core"
import type { SessionId, TurnId } from "@parley/core/Ids"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import type { Cause } from "effect"
import { DateTime, Deferred, Effect, Equal, Fiber, Queue, Redacted, Schema, Stream } from "effect"
import { createServer } from "node:http"
import { makeFramer, pushed } from "../src/internal/sse.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const sessionId = "ses_0123456789abcdef0123" as SessionId
const turnId = "turn_0123456789abcdef0123_0" as TurnId
const t0 = DateTime.makeUnsafe("2026-01-02T03:04:05.678Z")
const t1 = DateTime.makeUnsafe("2026-01-02T03:04:05.679Z")

const delta = (seq: number, at: DateTime.Utc, text: string, messageId = "msg_1") =>
  new TurnEvent.MessageDelta({ sessionId, turnId, seq, at, messageId, delta: text })

const tricky = ["plain ", "\"quoted\" ", "two\nlines ", "back\\slash ", "émoji 🎉 ", "", "\u2028end"]

/** A run of deltas whose envelope changes: the time, the step (`seq`), the message. */
const deltas: ReadonlyArray<TurnEvent.MessageDelta> = [
  ...tricky.map((text) => delta(3, t0, text)),
  delta(3, t1, "later "),
  delta(3, t1, "same time "),
  delta(5, t1, "next step "),
  delta(5, t1, "other message", "msg_2")
]

const ended = new TurnEvent.TurnEnded({
  sessionId,
  turnId,
  seq: 6,
  at: t1,
  state: new TurnState.Completed({ sessionId, turnId, text: "done" })
})

const decodeData = (frame: string) => {
  const line = frame.split("\n").find((l) => l.startsWith("data: ")) ?? ""
  return Schema.decodeUnknownSync(TurnEvent.TurnEvent)(JSON.parse(line.slice(6)))
}

describe("SSE frames", () => {
  it("the server's frames of a run of deltas decode to the events themselves", () => {
    const framer = makeFramer()
    for (const event of [...deltas, ended]) {
      const frame = framer(event)
      assert.isTrue(frame.endsWith("\n\n"))
      assert.isTrue(frame.split("\n").includes(`event: ${event._tag}`))
      assert.strictEqual(frame.split("\n").includes(`id: ${event.seq}`), event._tag !== "MessageDelta")
      assert.isTrue(Equal.equals(decodeData(frame), event), `${event._tag} ${JSON.stringify(frame)}`)
    }
  })

  it.effect("the reader decodes frames cut anywhere, skips a malformed delta, follows a changed time or step", () =>
    Effect.gen(function*() {
      const framer = makeFramer()
      const malformed = `event: MessageDelta\ndata: ${
        JSON.stringify({ ...Schema.encodeSync(TurnEvent.TurnEvent)(deltas[0]), delta: 5 })
      }\n\n`
      // The malformed delta comes after a good one: its envelope is the last delta's, and it is still refused.
      const text = [
        ": heartbeat\n\n",
        framer(deltas[0]),
        malformed,
        ...deltas.slice(1).map(framer),
        framer(ended)
      ].join("")
      const server = createServer((_, response) => {
        response.writeHead(200, { "content-type": "text/event-stream" })
        // Pieces of 1 to 40 characters, each written on its own turn of the event loop.
        let at = 0
        let size = 1
        const next = () => {
          if (at >= text.length) return response.end()
          response.write(text.slice(at, at + size))
          at += size
          size = (size * 7) % 41 || 1
          setImmediate(next)
        }
        next()
      })
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () => Effect.sync(() => server.close())
      )
      const address = server.address()
      const url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
      const read = yield* Effect.flatMap(Transport.Transport, (transport) =>
        transport.events(sessionId, 0).pipe(
          Stream.takeUntil((event) => event._tag === "TurnEnded"),
          Stream.runCollect
        )).pipe(Effect.provide(HttpTransport.layer({ url, apiKey: "key" })))
      const events = read
      assert.strictEqual(events.length, deltas.length + 1)
      events.forEach((event, i) => assert.isTrue(Equal.equals(event, [...deltas, ended][i]), `event ${i}`))
      // A decoded delta is the class, its time a DateTime (not the last delta's when it changed).
      assert.instanceOf(events[0], TurnEvent.MessageDelta)
      const later = events[tricky.length]
      assert.isTrue(later._tag === "MessageDelta" && DateTime.Equivalence(later.at, t1))
    }))

  it.effect("a streamed answer over a real server: every delta's text, in order, for two turns", () =>
    Effect.gen(function*() {
      const texts = ["A \"quoted\" word,\nthen a new line and émoji 🎉.", "Second turn: back\\slash and more words."]
      const model = yield* ScriptedModel.make(texts.map(ScriptedModel.text))
      const url = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, { runtimeTools: [] })
      yield* Effect.gen(function*() {
        const transport = yield* Transport.Transport
        const session = yield* Agent.startSession(Agent.make({ name: "writer", model: "scripted" }))
        for (const text of texts) {
          // Deltas are live only: the stream is open (`subscribe` connects before it returns) before the message.
          const { cursor } = yield* transport.getSession(session.id)
          const live = yield* transport.subscribe(session.id, cursor ?? 0)
          const turn = yield* Session.sendMessage(session, text)
          const events = yield* Stream.fromQueue(live).pipe(
            Stream.takeUntil((event) => event._tag === "TurnEnded"),
            Stream.runCollect
          )

          const streamed = events.filter((event) => event._tag === "MessageDelta")
          assert.isAbove(streamed.length, 3)
          assert.strictEqual(streamed.map((event) => event.delta).join(""), text)
          for (const event of streamed) {
            assert.strictEqual(event.turnId, turn.turnId)
            assert.instanceOf(event, TurnEvent.MessageDelta)
          }
          const last = events[events.length - 1]
          assert.isTrue(last._tag === "TurnEnded" && last.state._tag === "Completed" && last.state.text === text)
        }
      }).pipe(Effect.provide(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice) })))
    }))

  it.effect("the server's stream is pushed: a batch read from its source is in the response's text in the same step", () =>
    Effect.gen(function*() {
      const source = yield* Queue.unbounded<TurnEvent.TurnEvent, Cause.Done>()
      const shutdown = yield* Deferred.make<void>()
      const written: Array<string> = []
      const response = yield* pushed(Stream.fromQueue(source), { heartbeat: undefined, shutdown }).pipe(
        Stream.runForEach((text) => Effect.sync(() => void written.push(text))),
        Effect.forkChild
      )
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      assert.deepStrictEqual(written, [": heartbeat\n\n"])
      // The source's reader woken at once (as the engine's follower wakes it): the frame is written in that step.
      Queue.offerUnsafe(source, ended)
      Queue.flushUnsafe(source)
      assert.deepStrictEqual(written, [": heartbeat\n\n", makeFramer()(ended)])
      // The server stops: the stream ends.
      yield* Deferred.succeed(shutdown, undefined)
      yield* Fiber.join(response)
      assert.strictEqual(written.length, 2)
    }))

  it.effect("a reader that does not keep up is let go: past maxPending characters waiting, the stream ends after them", () =>
    Effect.gen(function*() {
      const source = yield* Queue.unbounded<TurnEvent.TurnEvent, Cause.Done>()
      const shutdown = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const written: Array<string> = []
      const frameLength = makeFramer()(ended).length
      // The reader takes the heartbeat, then stalls (a full socket) until the gate opens.
      const response = yield* pushed(Stream.fromQueue(source), {
        heartbeat: undefined,
        shutdown,
        maxPending: 10 * frameLength
      })
        .pipe(
          Stream.runForEach((text) =>
            Effect.andThen(
              Effect.sync(() => void written.push(text)),
              written.length === 1 ? Deferred.await(gate) : Effect.void
            )
          ),
          Effect.forkChild
        )
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      for (let event = 0; event < 100; event++) {
        Queue.offerUnsafe(source, ended)
        Queue.flushUnsafe(source)
        yield* Effect.yieldNow
      }
      yield* Deferred.succeed(gate, undefined)
      // The stream ended by itself (the server did not stop), after what was waiting: at most the bound and one batch.
      yield* Fiber.join(response)
      const frames = written.slice(1).join("")
      assert.isAbove(frames.length, 0)
      assert.isAtMost(frames.length, 12 * frameLength)
      assert.strictEqual(frames.length % frameLength, 0, "whole frames only")
      // A reader that keeps up is never let go: the same 100 frames, read as they come, all arrive.
      const steady = yield* Queue.unbounded<TurnEvent.TurnEvent, Cause.Done>()
      const read: Array<string> = []
      const reader = yield* pushed(Stream.fromQueue(steady), {
        heartbeat: undefined,
        shutdown: yield* Deferred.make<void>(),
        maxPending: 10 * frameLength
      })
        .pipe(Stream.runForEach((text) => Effect.sync(() => void read.push(text))), Effect.forkChild)
      for (let event = 0; event < 100; event++) {
        Queue.offerUnsafe(steady, ended)
        Queue.flushUnsafe(steady)
        yield* Effect.yieldNow
      }
      yield* Queue.end(steady)
      yield* Fiber.join(reader)
      assert.strictEqual(read.slice(1).join("").length, 100 * frameLength)
    }))
})
