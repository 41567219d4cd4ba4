/**
 * The SSE reader: a tree's events from a cursor, over as many connections as it takes. Each connection asks for the
 * events after the last one read (`Last-Event-ID`); a dropped connection (a network error, the server closing the
 * stream, a restarted server) is opened again under the reconnect `Schedule`, and events already read are dropped,
 * so the stream has no gap and no duplicate. Only `SessionNotFound` ends it with an error.
 */
import * as Handover from "@parley/core/Handover"
import type { SessionId } from "@parley/core/Ids"
import { SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import { eventStreamContentType } from "@parley/core/ProtocolApi"
import { MessageDelta, TurnEvent } from "@parley/core/TurnEvent"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"

/** A connection that ended or failed: opened again. */
export class Dropped extends Schema.TaggedError<Dropped>()("Dropped", { description: Schema.String }) {}

const decodeEvent = Schema.decodeUnknownResult(TurnEvent)
const decodeError = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Union([SessionNotFound, TransportFailure])))

export interface Options {
  readonly client: HttpClient.HttpClient
  readonly reconnect: Schedule.Schedule<unknown, unknown>
}

const describe = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Decodes the `data` of each frame as a `TurnEvent` (`undefined`: not one). A model's deltas come by the thousand and
 * differ from the delta before only in their text: a delta whose other fields are those of the last delta decoded is
 * built from that one's decoded fields (its text checked to be a string), not decoded again.
 */
export const makeDecoder = () => {
  let last: MessageDelta | undefined
  let lastAt: unknown
  return (data: string): TurnEvent | undefined => {
    const json = parseJson(data)
    if (typeof json !== "object" || json === null) return undefined
    const fields = json as Record<string, unknown>
    if (
      last !== undefined && fields._tag === "MessageDelta" && typeof fields.delta === "string" &&
      fields.sessionId === last.sessionId && fields.turnId === last.turnId && fields.seq === last.seq &&
      fields.messageId === last.messageId && fields.at === lastAt
    ) {
      return new MessageDelta({
        sessionId: last.sessionId,
        turnId: last.turnId,
        seq: last.seq,
        at: last.at,
        messageId: last.messageId,
        delta: fields.delta
      }, { disableChecks: true })
    }
    const decoded = decodeEvent(json)
    if (Result.isFailure(decoded)) return undefined
    if (decoded.success._tag === "MessageDelta") {
      last = decoded.success
      lastAt = fields.at
    }
    return decoded.success
  }
}

/**
 * The frames of the SSE text, cut and read by Effect's SSE decoder (`effect/encoding/Sse`): each frame's `data` lines
 * joined by newlines, comments (the heartbeat) and frames without `data` skipped. A frame that outgrows 10 MiB, or a
 * `retry:` directive (Effect's decoder ends the stream on one: the server sends none), ends the connection.
 */
export const frames = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<Sse.Event, E | Dropped, R> =>
  text.pipe(
    Stream.pipeThroughChannel(Sse.decode<E, unknown>()),
    Stream.mapError((error) =>
      error instanceof Sse.SseError || error instanceof Sse.Retry
        ? new Dropped({ description: error instanceof Sse.Retry ? "the server asked to reconnect" : error.message })
        : error
    )
  )

/**
 * The SSE text parsed into the tree's events: its frames (`frames`), each frame's `data` decoded (a frame that does
 * not decode is skipped). Other fields (`id`, `event`) are not needed: the event carries its `seq` and `_tag`.
 */
export const parse = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<TurnEvent, E | Dropped, R> =>
  Stream.suspend(() => {
    const decode = makeDecoder()
    return Stream.filterMap(frames(text), (frame) => {
      const event = decode(frame.data)
      return event === undefined ? Result.failVoid : Result.succeed(event)
    })
  })

/**
 * Drops the events before the cursor (deltas pass: they share their step's `seq`) and moves the cursor past each
 * stored event read: one synchronous pass per chunk.
 */
const fromCursor = <E, R>(
  events: Stream.Stream<TurnEvent, E, R>,
  cursor: { next: number }
): Stream.Stream<TurnEvent, E, R> =>
  Stream.filter(events, (event) => {
    if (event._tag === "MessageDelta") return true
    if (event.seq < cursor.next) return false
    cursor.next = event.seq + 1
    return true
  })

/** Opens one connection: its events (ended by `Dropped`), or the typed error of a refused request. */
const connect = (options: Options, sessionId: SessionId, from: number) =>
  Effect.gen(function*() {
    const request = HttpClientRequest.get(`/sessions/${sessionId}/events`).pipe(
      HttpClientRequest.setHeaders({
        accept: eventStreamContentType,
        // The seq of the last event read: none before the first (a header of -1 is refused).
        ...(from === 0 ? {} : { "last-event-id": String(from - 1) })
      })
    )
    const response: HttpClientResponse.HttpClientResponse = yield* options.client.execute(request).pipe(
      Effect.mapError((error) => new Dropped({ description: describe(error) }))
    )
    if (response.status !== 200) {
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      const error = decodeError(body)
      if (Result.isSuccess(error) && error.success._tag === "SessionNotFound") return yield* error.success
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
      parse,
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
    const cursor = { next: from }
    const once = fromCursor(Stream.unwrap(Effect.suspend(() => connect(options, sessionId, cursor.next))), cursor)
    return once.pipe(
      Stream.retry(Schedule.while(options.reconnect, ({ input }) => input instanceof Dropped)),
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
    const cursor = { next: from }
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
    const head = fromCursor(first, cursor).pipe(Stream.catchTag("Dropped", () => Stream.empty))
    return Stream.concat(head, Stream.suspend(() => events(options, sessionId, cursor.next)))
  })

/**
 * `open`'s stream in a queue, as `Transport.subscribe` hands it out. Pushed: the taker gets each batch as soon as the
 * code that read it from the connection is done (a microtask), not at the scheduler's next round, a turn of the event
 * loop later (`Stream.toQueue` would wait for it: under load, milliseconds).
 */
export const subscribe = (
  options: Options,
  sessionId: SessionId,
  from: number
): Effect.Effect<
  Queue.Dequeue<TurnEvent, SessionNotFound | TransportFailure | Cause.Done>,
  SessionNotFound | TransportFailure,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const stream = yield* open(options, sessionId, from)
    const queue = yield* Queue.unbounded<TurnEvent, SessionNotFound | TransportFailure | Cause.Done>()
    const handOver = Handover.make(queue)
    yield* stream.pipe(
      Stream.runForEachArray((batch) =>
        Effect.sync(() => {
          Queue.offerAllUnsafe(queue, batch)
          handOver()
        })
      ),
      Effect.matchCauseEffect({
        onFailure: (cause) => Queue.failCause(queue, cause),
        onSuccess: () => Queue.end(queue)
      }),
      Effect.forkScoped
    )
    return queue
  })
