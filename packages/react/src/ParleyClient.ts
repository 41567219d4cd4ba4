/**
 * The client the hooks share: `@parley/transport-http`'s `Transport` to one server with one key, in a runtime of its
 * own, and what it learns while it talks to the server — whether the server answers (`Connection`), which answers
 * were sent from here (to say "answered here" only of those), and when the open callbacks may have changed. Give it to
 * the components with `Provider`; `useClient` reads it back.
 *
 * Made once per app (not per render), and disposed when the app goes (`dispose`: its streams and polls stop).
 *
 * @example
 * ```ts
 * import { ParleyClient } from "@parley/react"
 * import { createElement } from "react"
 *
 * const client = ParleyClient.make({ url: "http://127.0.0.1:8787", apiKey: "parley_…" })
 *
 * const App = () => createElement("p", null, "…")
 * // what createRoot(…).render(…) renders: the app under the client's Provider
 * const root = createElement(ParleyClient.Provider, { client }, createElement(App))
 * ```
 *
 * @since 0.1.0
 */
import { ProtocolApi } from "@parley/core/ProtocolApi"
import type { Transport } from "@parley/core/Transport"
import * as HttpTransport from "@parley/transport-http/HttpTransport"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { ReactNode } from "react"
import { createContext, createElement, useContext } from "react"
import type * as Connection from "./Connection.js"
import * as Store from "./internal/store.js"

/**
 * The protocol's own client (`HttpApiClient` of core's `ProtocolApi`) for what the `Transport` port does not cover:
 * the sessions of the key (`sessions.list`) and the agents the server offers (`agents.list`). Same key, same
 * connection state as the transport's requests.
 *
 * @since 0.1.0
 * @category Context
 */
export class Api extends Context.Service<Api, HttpApiClient.ForApi<typeof ProtocolApi>>()("@parley/react/Api") {}

/**
 * What the hooks' effects need: the `Transport`, and the protocol's client (`Api`).
 *
 * @since 0.1.0
 * @category Models
 */
export type Services = Transport | Api

/**
 * @since 0.1.0
 * @category Models
 */
export interface ParleyClient {
  /** The server's base URL. */
  readonly url: string
  /** The runtime the hooks run their effects in: it provides the `Transport` to the server. */
  readonly runtime: ManagedRuntime.ManagedRuntime<Services, never>
  /** Whether the server answers, as the last request found. */
  readonly connection: Store.Store<Connection.State>
  /** Ticks when the open callbacks may have changed (an answer sent, a callback opened or resolved in a session). */
  readonly inboxChanged: Store.Store<number>
  /** The request ids of the answers sent from here, by callback id: "answered here" is the one that won with one. */
  readonly sentAnswers: Map<string, string>
  /** Stops every stream and poll of the hooks, and the runtime. */
  readonly dispose: () => Promise<void>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** The server's base URL: `window.location.origin` for an app the server serves. */
  readonly url: string
  /** The API key (sent as `Authorization: Bearer …`). */
  readonly apiKey: string
  /** Passed to `HttpTransport.layer`: how long to wait between reconnections (default: 50 ms doubling to 2 s). */
  readonly reconnect?: HttpTransport.Options["reconnect"]
  /** Passed to `HttpTransport.layer`: how long a message or an answer is sent again before it fails (default 1 minute). */
  readonly sendRetryFor?: HttpTransport.Options["sendRetryFor"]
  /**
   * Where the request ids of the answers sent from here are kept (default: a new `Map`, gone with the page). An app
   * that says "answered here" after a reload gives one backed by the tab's storage (`sessionStorage`).
   */
  readonly sentAnswers?: Map<string, string> | undefined
}

/**
 * The client of a server: the HTTP transport on the browser's `fetch`, every response telling the connection's state.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): ParleyClient => {
  const connection = Store.make<Connection.State>({ _tag: "Connecting" })
  const report = (next: Connection.State) =>
    Effect.sync(() => {
      const current = connection.get()
      if (current._tag !== next._tag) connection.set(next)
    })
  const observed = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    client.pipe(
      HttpClient.tap((response) =>
        report(
          response.status === 401 ? { _tag: "KeyRefused", since: Date.now() } : { _tag: "Connected", since: Date.now() }
        )
      ),
      HttpClient.tapError((error) =>
        HttpClientError.isHttpClientError(error) && error.response === undefined
          ? report({ _tag: "Unreachable", since: Date.now(), reason: error.message })
          : Effect.void
      )
    )
  const api = Layer.effect(
    Api,
    Effect.gen(function*() {
      const base = (yield* HttpClient.HttpClient).pipe(
        HttpClient.mapRequest(HttpClientRequest.bearerToken(options.apiKey))
      )
      return yield* HttpApiClient.makeWith(ProtocolApi, { httpClient: observed(base), baseUrl: options.url })
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
  const runtime = ManagedRuntime.make(
    Layer.merge(
      HttpTransport.layer({
        url: options.url,
        apiKey: options.apiKey,
        reconnect: options.reconnect,
        sendRetryFor: options.sendRetryFor,
        transformClient: observed
      }),
      api
    )
  )
  return {
    url: options.url,
    runtime,
    connection,
    inboxChanged: Store.make(0),
    sentAnswers: options.sentAnswers ?? new Map(),
    dispose: () => runtime.dispose()
  }
}

/**
 * Says that the open callbacks may have changed (a callback answered by a `Transport` call of your own, say): the
 * inbox hooks read them again at once.
 *
 * @since 0.1.0
 * @category Utils
 */
export const inboxMayHaveChanged = (client: ParleyClient): Effect.Effect<void> =>
  Effect.sync(() => client.inboxChanged.update((tick) => tick + 1))

const ClientContext = createContext<ParleyClient | undefined>(undefined)

/**
 * Gives `client` to the components below: every hook of this package reads it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const Provider = (props: { readonly client: ParleyClient; readonly children?: ReactNode }): ReactNode =>
  createElement(ClientContext.Provider, { value: props.client }, props.children)

/**
 * The client of the nearest `Provider`. Outside one, it throws: a hook of `@parley/react` was used in a component no
 * `ParleyClient.Provider` is above.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useClient = (): ParleyClient => {
  const client = useContext(ClientContext)
  if (client === undefined) {
    throw new Error(
      "@parley/react: no ParleyClient here: wrap the app in <ParleyClient.Provider client={ParleyClient.make({ url, apiKey })}>"
    )
  }
  return client
}
