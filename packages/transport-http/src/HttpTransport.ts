/**
 * The `Transport` port over HTTP: the client API (`Agent`, `Session`, `Turn`, `Inbox`) against a Parley server,
 * built with `HttpApiClient` from `@parley/core`'s `ProtocolApi` (it needs `core` only). A program moves from
 * `LocalTransport` to a deployed agent by changing this one layer; handlers and client tools still run in the
 * program's process, tools the runtime runs are the server's.
 *
 * Events come as Server-Sent Events. The reader reconnects with `Last-Event-ID` whenever a connection drops (the
 * network, the server closing its streams on shutdown, a restarted server), waiting between tries under `reconnect`
 * (exponential from 50 ms, capped at 2 s, by default), so `Turn.result` and `Turn.events` never fail on a drop and
 * never see an event twice or miss one. Every typed error of the server comes back as the same `ParleyError`, and a
 * request with several things wrong fails with the error the in-process transport gives it: a malformed request id
 * first, then an unknown session, then malformed turn or callback ids, then the answer (what is found wrong before
 * anything is sent is reported once the server says the session is there).
 *
 * `sendMessage` is safe to retry: each POST carries a request id (the caller's `requestId`, or one made up here), and
 * when the connection drops before the response is read, or the answer is a 502, 503 or 504, or no answer comes within
 * `sendTimeout`, the POST is sent again with the same id under `reconnect` (for at most `sendRetryFor`). The server
 * answers a repeated id with the turn the first POST queued, so a drop never duplicates a turn nor loses one. Answers
 * are sent the same way (`AnswerRequest.requestId`, or one made up): a retry of the answer that won is accepted again,
 * so a drop after the server committed an answer is not reported as `CallbackAlreadyAnswered`. A turn's snapshot
 * (`snapshot`, `getTurn`: the first request of `Turn.result`) is sent again on the same conditions, so a server that is
 * down when `Turn.result` starts (connection refused, or the 503 of a server that is stopping) is waited for under
 * `reconnect`, as the event stream's reconnections are, for at most `sendRetryFor`; `Turn.events` waits under
 * `reconnect` from its first connection on. The other requests (`createSession`, `getSession`, `grants`,
 * `revokeGrant`, `cancel`, `listOpen`) are sent once: a server that is down is a `TransportFailure` at once.
 *
 * A request over one of the server's limits (413 `PayloadTooLarge` or `MessageTooLong`, 429 `TooManyRequests`) fails
 * with `LimitExceeded`, which names the limit, its value and, for a 429, the seconds to wait (`retryAfter`); it is never
 * sent again by itself.
 *
 * @example
 * ```ts
 * import { Agent } from "@parley/core"
 * import { HttpTransport } from "@parley/transport-http"
 * import { Effect, Redacted } from "effect"
 *
 * const assistant = Agent.make({ name: "assistant", model: "mistral-large-latest", instructions: "Be brief." })
 *
 * // the same program as in-process: only the layer that provides the Transport changes
 * const program = Agent.run(assistant, "Hello").pipe(
 *   Effect.provide(HttpTransport.layer({ url: "http://127.0.0.1:8787", apiKey: Redacted.make("dev-key") }))
 * )
 * ```
 *
 * @since 0.1.0
 */
import type { Service } from "@parley/core/Transport"
import { Transport as TransportTag } from "@parley/core/Transport"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/httpTransport.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** The server's base URL, e.g. `http://127.0.0.1:8787`. */
  readonly url: string | URL
  /** The API key (sent as `Authorization: Bearer …`). */
  readonly apiKey: Redacted.Redacted<string> | string
  /**
   * How long to wait between tries when an event stream drops, or a `sendMessage` or `answer` POST or a snapshot must
   * be sent again (default: exponential from 50 ms, capped at 2 s, forever).
   */
  readonly reconnect?: Schedule.Schedule<unknown, unknown> | undefined
  /**
   * How long one `sendMessage` or `answer` POST, or one snapshot, may wait for its response before it is sent again
   * (default: 30 s).
   */
  readonly sendTimeout?: Duration.Input | undefined
  /**
   * How long `sendMessage`, `answer` or a snapshot keeps sending its request again before it fails with
   * `TransportFailure` (default: 1 minute). The caller may then send again with the same `requestId`: still one turn,
   * still one answer.
   */
  readonly sendRetryFor?: Duration.Input | undefined
  /** Changes the `HttpClient` of every request (retries, proxies, tracing). */
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/**
 * The default reconnection schedule: exponential from 50 ms, each wait at most 2 s, forever; it starts over after
 * 10 s without a drop.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const defaultReconnect: Schedule.Schedule<unknown, unknown> = internal.resetAfter(
  Schedule.min([Schedule.exponential("50 millis"), Schedule.spaced("2 seconds")]),
  "10 seconds"
)

/**
 * Builds the transport on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: (options: Options) => Effect.Effect<Service, never, HttpClient.HttpClient | Scope.Scope> = (
  options
) =>
  internal.make({
    ...options,
    reconnect: options.reconnect ?? defaultReconnect,
    sendTimeout: options.sendTimeout ?? "30 seconds",
    sendRetryFor: options.sendRetryFor ?? "1 minute"
  })

/**
 * The transport on the `HttpClient` in context (e.g. `NodeHttpClient.layerUndici`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWithoutClient = (options: Options): Layer.Layer<TransportTag, never, HttpClient.HttpClient> =>
  Layer.effect(TransportTag, make(options))

/**
 * The transport on the platform's `fetch` (`FetchHttpClient`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<TransportTag> =>
  layerWithoutClient(options).pipe(Layer.provide(FetchHttpClient.layer))
