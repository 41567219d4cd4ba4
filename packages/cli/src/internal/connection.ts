/**
 * Which server a command talks to and with which key (`--url` / `PARLEY_URL`, `--key` / `PARLEY_API_KEY`, else the
 * local server and the key `parley serve` keeps in `.parley/api-key`), and the `Transport` and `ProtocolApi` client
 * to it, their errors `explain`ed.
 */
import type { SessionId } from "@parley/core/Ids"
import { ProtocolApi } from "@parley/core/ProtocolApi"
import { Transport } from "@parley/core/Transport"
import type * as TransportModule from "@parley/core/Transport"
import { TurnEvent } from "@parley/core/TurnEvent"
import * as HttpTransport from "@parley/transport-http/HttpTransport"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { CliError, explain } from "./errors.js"

export const defaultUrl = "http://127.0.0.1:8787"

export const options = {
  url: Flag.String("url").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(`The server's URL (default: PARLEY_URL, else ${defaultUrl}).`),
    Flag.optional
  ),
  key: Flag.Redacted("key").pipe(
    Flag.withMetavar("KEY"),
    Flag.withDescription(
      "The API key (default: PARLEY_API_KEY, else the local key `parley serve` keeps in .parley/api-key)."
    ),
    Flag.optional
  )
}

export interface Connection {
  readonly url: string
  readonly key: string
  /** Where the key came from, for the hint of a refused key. */
  readonly keySource: string
}

/** The `.parley/api-key` of `PARLEY_DATA_DIR`, or of this folder or the nearest one above that has one. */
const keyFile = (): string | undefined => {
  const dataDir = process.env.PARLEY_DATA_DIR
  if (dataDir !== undefined && dataDir !== "") return path.join(dataDir, "api-key")
  let dir = process.cwd()
  for (;;) {
    const file = path.join(dir, ".parley", "api-key")
    if (fs.existsSync(file)) return file
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

export const resolve = (given: {
  readonly url: Option.Option<string>
  readonly key: Option.Option<Redacted.Redacted<string>>
}): Effect.Effect<Connection, CliError> =>
  Effect.suspend(() => {
    const url = Option.getOrElse(given.url, () => process.env.PARLEY_URL || defaultUrl).replace(/\/+$/, "")
    if (Option.isSome(given.key)) {
      return Effect.succeed({ url, key: Redacted.value(given.key.value), keySource: "--key" })
    }
    const env = process.env.PARLEY_API_KEY
    if (env !== undefined && env !== "") return Effect.succeed({ url, key: env, keySource: "PARLEY_API_KEY" })
    const file = keyFile()
    if (file !== undefined && fs.existsSync(file)) {
      return Effect.succeed({ url, key: fs.readFileSync(file, "utf8").trim(), keySource: file })
    }
    return Effect.fail(
      new CliError({
        message: "no API key: none given, PARLEY_API_KEY is not set and no .parley/api-key was found",
        hint: "pass --key, set PARLEY_API_KEY, or run in the folder where `parley serve` created .parley/api-key",
        exitCode: 1
      })
    )
  })

/** Runs `use` with the transport to the connection's server; its errors become one line (`explain`). */
export const withTransport = <A, E>(
  connection: Connection,
  use: (transport: TransportModule.Service) => Effect.Effect<A, E>
): Effect.Effect<A, CliError> =>
  Effect.flatMap(Transport, use).pipe(
    Effect.provide(HttpTransport.layer({ url: connection.url, apiKey: connection.key })),
    Effect.mapError(explain(connection))
  )

const apiClient = (connection: Connection) =>
  HttpApiClient.make(ProtocolApi, {
    baseUrl: connection.url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(connection.key))
  })

type ApiClient = Effect.Success<ReturnType<typeof apiClient>>

/** Runs `use` with `ProtocolApi`'s client for the routes the `Transport` has no method for (sessions, agents). */
export const withApi = <A, E>(
  connection: Connection,
  use: (client: ApiClient) => Effect.Effect<A, E>
): Effect.Effect<A, CliError> =>
  Effect.flatMap(apiClient(connection), use).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.mapError(explain(connection))
  )

const decodeEvent = Schema.decodeUnknownResult(Schema.fromJsonString(TurnEvent))

/** The events of a session stored now, from `from` (`?live=false`: the response ends), in order. */
export const storedEvents = (connection: Connection, sessionId: SessionId, from: number) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const request = HttpClientRequest.get(`${connection.url}/sessions/${sessionId}/events`).pipe(
      HttpClientRequest.setUrlParams({ from: String(from), live: "false" }),
      HttpClientRequest.bearerToken(connection.key)
    )
    const response = yield* client.execute(request).pipe(
      Effect.mapError(explain(connection))
    )
    const text = yield* response.text.pipe(Effect.mapError(explain(connection)))
    if (response.status === 401) return yield* explain(connection)({ message: "Unauthorized" })
    if (response.status === 404) {
      return yield* new CliError({
        message: `no session ${sessionId} for this key`,
        hint: "`parley sessions list` shows the sessions of this key",
        exitCode: 1
      })
    }
    if (response.status !== 200) {
      return yield* new CliError({ message: `the server answered ${response.status}: ${text}`, exitCode: 1 })
    }
    const events: Array<TurnEvent> = []
    for (const frame of text.split("\n\n")) {
      const data = frame.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim())
      if (data.length === 0) continue
      const decoded = decodeEvent(data.join("\n"))
      if (Result.isSuccess(decoded)) events.push(decoded.success)
    }
    return events
  }).pipe(Effect.provide(FetchHttpClient.layer))
