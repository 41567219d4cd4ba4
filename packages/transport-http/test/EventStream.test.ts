/**
 * The SSE reader's parsing, piece by piece: a frame's `data` (as the SSE format defines it), frames cut anywhere in
 * the text, and the decoder's shortcut for a run of deltas (the end-to-end checks, against a hand-written stream and
 * a real server, are the server package's `SseFrames` tests).
 */
import { assert, describe, it } from "@effect/vitest"
import { TurnEvent } from "@parley/core"
import type { SessionId, TurnId } from "@parley/core/Ids"
import { DateTime, Effect, Equal, Queue, Schedule, Schema, Stream } from "effect"
import { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { frames, makeDecoder, parse, subscribe } from "../src/internal/eventStream.js"

const sessionId = "ses_0123456789abcdef0123" as SessionId
const turnId = "turn_0123456789abcdef0123_0" as TurnId
const at = DateTime.makeUnsafe("2026-01-02T03:04:05.678Z")
const delta = (seq: number, text: string) =>
  new TurnEvent.MessageDelta({ sessionId, turnId, seq, at, messageId: "msg_1", delta: text })
const json = (event: TurnEvent.TurnEvent) => JSON.stringify(Schema.encodeSync(TurnEvent.TurnEvent)(event))

describe("EventStream", () => {
  it.effect("a frame's data: its data lines joined, with or without the space, CR LF or LF; none for a comment", () =>
    Effect.gen(function*() {
      // The `data` of each frame read from the pieces of text (Effect's SSE decoder, as the reader runs it).
      const dataOf = (...pieces: Array<string>) =>
        Effect.map(Stream.runCollect(frames(Stream.fromIterable(pieces))), (read) => read.map((frame) => frame.data))
      assert.deepStrictEqual(yield* dataOf("id: 4\nevent: TurnStarted\ndata: {\"a\":1}\n\n"), ["{\"a\":1}"])
      assert.deepStrictEqual(yield* dataOf("data:x\ndata: y\ndata\n\n"), ["x\ny\n"])
      assert.deepStrictEqual(yield* dataOf("data: one\r\ndata: two\r\n\r\n"), ["one\ntwo"])
      assert.deepStrictEqual(yield* dataOf("data:  two spaces\n\n"), [" two spaces"])
      assert.deepStrictEqual(yield* dataOf(": heartbeat\n\n"), [])
      assert.deepStrictEqual(yield* dataOf("database: no\nevent: x\n\n"), [])
      // A frame is read once its blank line comes; one the text ends inside is not.
      assert.deepStrictEqual(yield* dataOf("data: last line without its newline"), [])
      assert.deepStrictEqual(yield* dataOf("data: last line", " without its newline", "\n", "\n"), [
        "last line without its newline"
      ])
    }))

  it("the decoder: a run of deltas, a malformed one refused, a changed step decoded in full", () => {
    const decode = makeDecoder()
    const first = decode(json(delta(3, "a")))
    assert.isTrue(first !== undefined && Equal.equals(first, delta(3, "a")))
    const second = decode(json(delta(3, "b")))
    assert.instanceOf(second, TurnEvent.MessageDelta)
    assert.isTrue(second !== undefined && Equal.equals(second, delta(3, "b")))
    assert.strictEqual(decode(JSON.stringify({ ...JSON.parse(json(delta(3, "c"))), delta: 7 })), undefined)
    assert.strictEqual(decode("{not json"), undefined)
    assert.strictEqual(decode(JSON.stringify({ ...JSON.parse(json(delta(3, "c"))), sessionId: "nope" })), undefined)
    const next = decode(json(delta(4, "d")))
    assert.isTrue(next !== undefined && next._tag === "MessageDelta" && next.seq === 4)
  })

  it.effect("frames cut anywhere in the text: every event once, in order; comments skipped", () =>
    Effect.gen(function*() {
      const events = Array.from({ length: 40 }, (_, i) => delta(3, `word ${i}\n`))
      const text = `: heartbeat\n\n${events.map((event) => `event: MessageDelta\ndata: ${json(event)}\n\n`).join("")}`
      for (const size of [1, 2, 7, 64, 1000, text.length]) {
        const pieces: Array<string> = []
        for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size))
        const read = yield* Stream.runCollect(parse(Stream.fromIterable(pieces)))
        assert.strictEqual(read.length, events.length, `pieces of ${size}`)
        read.forEach((event, i) => assert.isTrue(Equal.equals(event, events[i]), `pieces of ${size}, event ${i}`))
      }
    }))

  it.effect("subscribe is pushed: what a connection delivers is in the queue before the event loop turns", () =>
    Effect.gen(function*() {
      let controller: ReadableStreamDefaultController<Uint8Array> | undefined
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
      const client = HttpClient.make((request) =>
        Effect.succeed(
          HttpClientResponse.fromWeb(
            request,
            new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })
          )
        )
      ).pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl("http://127.0.0.1:8787")))
      const queue = yield* subscribe({ client, reconnect: Schedule.spaced("1 second") }, sessionId, 0)
      const taken: Array<number> = []
      yield* Effect.forkChild(Effect.forever(
        Effect.map(Queue.takeAll(queue), (batch) => taken.push(...batch.map((event) => event.seq)))
      ))
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      const frame = (event: TurnEvent.TurnEvent) => new TextEncoder().encode(`data: ${json(event)}\n\n`)
      // Bytes arrive on the connection; the reader's promises settle in microtasks, and so does the hand-over.
      const seen = yield* Effect.promise(() =>
        new Promise<ReadonlyArray<number>>((resolve) => {
          controller?.enqueue(frame(delta(3, "a")))
          setImmediate(() => resolve([...taken]))
        })
      )
      assert.deepStrictEqual(seen, [3])
    }).pipe(Effect.scoped))
})
