/**
 * The SSE reader: a tree's events from a cursor, over as many connections as it takes. Each connection asks for the
 * events after the last one read (`Last-Event-ID`); a dropped connection (a network error, the server closing the
 * stream, a restarted server) is opened again under the reconnect `Schedule`, and events already read are dropped,
 * so the stream has no gap and no duplicate. Only `SessionNotFound` ends it with an error.
 */
import * as Sse from "@effect/experimental/Sse"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type { SessionId } from "@parley/core/Ids"
import { SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import { eventStreamContentType } from "@parley/core/ProtocolApi"
import { TurnEvent } from "@parley/core/TurnEvent"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/** A connection that ended or failed: opened again. */
class Dropped extends Schema.TaggedError<Dropped>()("Dropped", { description: Schema.String }) {}

const decodeEvent = Schema.decodeEither(Schema.parseJson(TurnEvent))
const decodeError = Schema.decodeUnknownEither(Schema.parseJson(Schema.Union(SessionNotFound, TransportFailure)))

export interface Options {
  readonly client: HttpClient.HttpClient
  readonly reconnect: Schedule.Schedule<unknown, unknown>
}

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/**
 * The text cut at frame ends (a blank line) before the SSE parser, one frame a piece: the parser's cost grows with the
 * square of the piece it is given, and a server that writes a batch of events at once sends large pieces.
 */
const frames = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<string, E, R> =>
  Stream.suspend(() => {
    let tail = ""
    return Stream.mapChunks(text, (chunk) => {
      const out: Array<string> = []
      for (const piece of chunk) {
        const parts = (tail + piece).split("\n\n")
        tail = parts.pop() ?? ""
        for (const part of parts) out.push(`${part}\n\n`)
      }
      return Chunk.unsafeFromArray(out)
    })
  })

/** Opens one connection: its events (ended by `Dropped`), or the typed error of a refused request. */
const connect = (options: Options, sessionId: SessionId, from: number) =>
  Effect.gen(function*() {
    const request = HttpClientRequest.get(`/sessions/${sessionId}/events`).pipe(
      HttpClientRequest.setHeaders({ accept: eventStreamContentType, "last-event-id": String(from - 1) })
    )
    const response: HttpClientResponse.HttpClientResponse = yield* options.client.execute(request).pipe(
      Effect.mapError((error) => new Dropped({ description: describe(error) }))
    )
    if (response.status !== 200) {
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      const error = decodeError(body)
      if (Either.isRight(error) && error.right._tag === "SessionNotFound") return yield* error.right
      if (response.status >= 400 && response.status < 500 && response.status !== 429) {
        return yield* new TransportFailure({
          module: "HttpTransport",
          method: "events",
          description: `HTTP ${response.status}: ${body.slice(0, 200)}`
        })
      }
      // Anything else (a server starting, a proxy, a stream cap) is worth another try.
      return yield* new Dropped({ description: `HTTP ${response.status}: ${body.slice(0, 200)}` })
    }
    return response.stream.pipe(
      Stream.decodeText(),
      frames,
      Stream.pipeThroughChannel(Sse.makeChannel()),
      Stream.mapChunks((chunk) => Chunk.filterMap(chunk, (event) => Either.getRight(decodeEvent(event.data)))),
      Stream.mapError((error) => new Dropped({ description: describe(error) })),
      Stream.concat(Stream.fail(new Dropped({ description: "the server ended the stream" })))
    )
  })

/** The events from `from` on, never ending by itself; fails only with `SessionNotFound`. */
export const events = (
  options: Options,
  sessionId: SessionId,
  from: number
): Stream.Stream<TurnEvent, SessionNotFound | TransportFailure> =>
  Stream.suspend(() => {
    // The next stored event wanted: every connection starts there.
    let next = from
    const once = Stream.unwrap(Effect.suspend(() => connect(options, sessionId, next))).pipe(
      Stream.filter((event) => event._tag === "MessageDelta" || event.seq >= next),
      Stream.tap((event) =>
        Effect.sync(() => {
          if (event._tag !== "MessageDelta") next = event.seq + 1
        })
      )
    )
    return once.pipe(
      Stream.retry(Schedule.whileInput(options.reconnect, (error: unknown) => error instanceof Dropped)),
      Stream.catchTag("Dropped", (dropped) =>
        Stream.fail(
          new TransportFailure({ module: "HttpTransport", method: "events", description: dropped.description })
        ))
    )
  })

/** The first connection is opened before the stream is returned: an unknown session fails at once. */
export const open = (
  options: Options,
  sessionId: SessionId,
  from: number
): Effect.Effect<Stream.Stream<TurnEvent, SessionNotFound | TransportFailure>, SessionNotFound | TransportFailure> =>
  Effect.gen(function*() {
    let next = from
    const first = yield* connect(options, sessionId, from).pipe(
      Effect.retry({ schedule: options.reconnect, while: (error) => error instanceof Dropped }),
      Effect.catchTag(
        "Dropped",
        (dropped) =>
          Effect.fail(
            new TransportFailure({ module: "HttpTransport", method: "subscribe", description: dropped.description })
          )
      )
    )
    const head = first.pipe(
      Stream.filter((event) => event._tag === "MessageDelta" || event.seq >= next),
      Stream.tap((event) =>
        Effect.sync(() => {
          if (event._tag !== "MessageDelta") next = event.seq + 1
        })
      ),
      Stream.catchTag("Dropped", () => Stream.empty)
    )
    return Stream.concat(head, Stream.suspend(() => events(options, sessionId, next)))
  })
