/**
 * The tree's log as Server-Sent Events, with `effect/encoding/Sse`'s encoder: `id:` is the event's `seq`
 * (deltas carry none: they share their step's), `event:` its `_tag`, `data:` the encoded `TurnEvent`. A comment
 * heartbeat opens the stream and comes every `heartbeat`. `Last-Event-ID` (or `?from=`) resumes right after an
 * event; `?live=false` gives the stored events and ends. Each key may hold `maxStreams` streams at once; when the
 * server stops, its streams end (clients resume by cursor).
 */
import type { SessionId } from "@parley/core/Ids"
import { eventStreamContentType, ProtocolApi, Tenant, TooManyStreams } from "@parley/core/ProtocolApi"
import { type MessageDelta, TurnEvent } from "@parley/core/TurnEvent"
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Access } from "./access.js"
import { resumeFrom } from "./handlers.js"
import type * as Served from "./served.js"

export interface Options {
  readonly maxStreams: number
  readonly heartbeat: Duration.Duration
  /** Completed when the server stops: every stream ends. */
  readonly shutdown: Deferred.Deferred<void>
}

const encodeEvent = Schema.encodeResult(TurnEvent)

const frame = (event: TurnEvent): string => {
  const encoded = encodeEvent(event)
  if (Result.isFailure(encoded)) return ""
  return Sse.encoder.write({
    _tag: "Event",
    event: event._tag,
    id: event._tag === "MessageDelta" ? undefined : String(event.seq),
    data: JSON.stringify(encoded.success)
  })
}

/**
 * The frames of one stream. A model's deltas come by the thousand and differ from the delta before only in their
 * text: the frame of a delta whose other fields are the last encoded delta's is that frame's text with the new text,
 * without encoding the event again (the same JSON, the text last).
 */
export const makeFramer = () => {
  let last: MessageDelta | undefined
  let head = ""
  return (event: TurnEvent): string => {
    if (event._tag !== "MessageDelta") return frame(event)
    if (
      last === undefined || event.sessionId !== last.sessionId || event.turnId !== last.turnId ||
      event.seq !== last.seq || event.messageId !== last.messageId ||
      event.at.epochMilliseconds !== last.at.epochMilliseconds
    ) {
      const encoded = encodeEvent(event)
      if (Result.isFailure(encoded)) return ""
      const { delta: _, ...rest } = encoded.success as { readonly delta: string }
      const json = JSON.stringify(rest)
      head = `event: MessageDelta\ndata: ${json.slice(0, -1)}${json.length > 2 ? "," : ""}"delta":`
      last = event
    }
    return `${head}${JSON.stringify(event.delta)}}\n\n`
  }
}

/**
 * The stored end of the tree's log (`undefined` for a tree with no events yet): the cursor its runtime reports, or —
 * from a transport that does not say — the cursor of the snapshot of the turn of its first stored event.
 */
export const storedEnd = (transport: Served.Served, root: SessionId) =>
  Effect.gen(function*() {
    const { cursor } = yield* transport.getSession(root)
    if (cursor !== undefined) return cursor === 0 ? undefined : cursor
    const first = yield* Stream.runHead(transport.events(root, 0)).pipe(
      Effect.timeoutOption(Duration.millis(250)),
      Effect.map(Option.flatten)
    )
    if (Option.isNone(first)) return undefined
    return yield* transport.snapshot(root, first.value.turnId).pipe(
      Effect.map((snapshot): number | undefined => snapshot.cursor),
      Effect.catchTag("TurnNotFound", () => Effect.succeed(undefined))
    )
  })

const heartbeatFrame = ": heartbeat\n\n"

/** How much framed text a stream may hold for a reader that does not keep up (4 Mi characters). */
const defaultMaxPending = 4 * 1024 * 1024

/**
 * The text of one stream: a heartbeat at once (the client has its response without waiting for an event), then the
 * frames of `source`'s events as they come, a heartbeat every `heartbeat` (if given), until `source` ends or fails or
 * the server stops. Pushed: the response takes its text from a queue that a fiber reading `source` fills and flushes
 * as it frames each batch, so the fiber that writes the response runs at once, in the same step (a `Stream.buffer` or
 * `Stream.merge` in between would each hand on at the scheduler's next round, a turn of the event loop later). Events
 * that came while a write was under way go out together, one write per batch.
 *
 * A reader that does not keep up is let go: once more than `maxPending` characters of frames wait for it (the socket
 * full, the client not reading), the stream ends after them, and the reader resumes by `Last-Event-ID` from the store
 * as from any drop. The server so holds at most that much of a stream's text, however slow its reader.
 */
export const pushed = (
  source: Stream.Stream<TurnEvent, unknown>,
  options: {
    readonly heartbeat: Duration.Duration | undefined
    readonly shutdown: Deferred.Deferred<void>
    readonly maxPending?: number | undefined
  }
): Stream.Stream<string> =>
  Stream.unwrap(Effect.gen(function*() {
    const maxPending = options.maxPending ?? defaultMaxPending
    const text = yield* Queue.unbounded<string, Cause.Done>()
    // The characters offered and not yet taken by the response.
    let pending = 0
    const write = (chunk: string) => {
      if (pending > maxPending) {
        Queue.endUnsafe(text)
        return
      }
      pending += chunk.length
      Queue.offerUnsafe(text, chunk)
      Queue.flushUnsafe(text)
    }
    write(heartbeatFrame)
    const framer = makeFramer()
    yield* source.pipe(
      Stream.runForEachArray((batch) => Effect.sync(() => write(batch.map(framer).join("")))),
      Effect.ignore,
      Effect.andThen(Queue.end(text)),
      Effect.forkScoped
    )
    if (options.heartbeat !== undefined) {
      yield* Effect.sleep(options.heartbeat).pipe(
        Effect.andThen(Effect.sync(() => write(heartbeatFrame))),
        Effect.forever,
        Effect.forkScoped
      )
    }
    // When the server stops, what was framed goes out and the stream ends.
    yield* Deferred.await(options.shutdown).pipe(Effect.andThen(Queue.end(text)), Effect.forkScoped)
    return Stream.fromQueue(text).pipe(Stream.mapArray((chunks) => {
      for (const chunk of chunks) pending -= chunk.length
      return chunks
    }))
  }))

export const events = (transport: Served.Served, access: Access, options: Options) => {
  const open = new Map<string, number>()
  return HttpApiBuilder.group(
    ProtocolApi,
    "events",
    (handlers) =>
      handlers.handleRaw("stream", ({ headers, params, query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const root = yield* access.owned(tenant.id, params.sessionId)
          const from = resumeFrom(headers["last-event-id"], query.from)
          const live = query.live !== "false"
          let source: Stream.Stream<TurnEvent, unknown>
          if (live) {
            source = transport.events(params.sessionId, from)
          } else {
            const end = yield* storedEnd(transport, root)
            source = end === undefined || from >= end ? Stream.empty : transport.events(root, from).pipe(
              Stream.filter((event) => event._tag !== "MessageDelta"),
              Stream.takeUntil((event) => event.seq >= end - 1),
              Stream.filter((event) =>
                event.seq < end && (root === params.sessionId || event.sessionId === params.sessionId)
              )
            )
          }
          const count = open.get(tenant.keyId) ?? 0
          if (count >= options.maxStreams) return yield* new TooManyStreams({ limit: options.maxStreams })
          open.set(tenant.keyId, count + 1)
          const release = Effect.sync(() => {
            const now = (open.get(tenant.keyId) ?? 1) - 1
            if (now <= 0) open.delete(tenant.keyId)
            else open.set(tenant.keyId, now)
          })
          const frames = pushed(source, {
            heartbeat: live ? options.heartbeat : undefined,
            shutdown: options.shutdown
          }).pipe(Stream.encodeText, Stream.ensuring(release))
          return HttpServerResponse.stream(frames, {
            contentType: eventStreamContentType,
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })
        }))
  )
}
