/**
 * The middleware around every request: the body limit (413 before anything is read, from `Content-Length`; a chunked
 * body is cut at the same size while read) and one structured log line per request — method, route, status, ms,
 * tenant and key id. Never headers, bodies or query strings: API keys, sign-in answers and answer payloads never
 * reach the log.
 */
import { TransportFailure } from "@parley/core/ParleyError"
import { InternalError, PayloadTooLarge } from "@parley/core/ProtocolApi"
import * as ByteSize from "effect/ByteSize"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import * as Incidents from "./incidents.js"

/** What the request's handlers learn about it (the tenant, once its key is checked). */
export interface RequestInfo {
  tenant: string | undefined
  keyId: string | undefined
}

export class CurrentRequest extends Context.Service<CurrentRequest, RequestInfo>()("@parley/server/CurrentRequest") {}

/**
 * The route of a path, ids replaced by their kind (`/sessions/:sessionId/turns/:turnId`); an answer link's token is
 * never logged (`/links/:token`).
 */
export const routeOf = (url: string) => {
  const path = url.split("?")[0] ?? url
  if (path.startsWith("/links/") && !path.endsWith("/revoke")) return "/links/:token"
  return path
    .replace(/\/ses_[^/]+/g, "/:sessionId")
    .replace(/\/turn_[^/]+/g, "/:turnId")
    .replace(/\/cb_[^/]+/g, "/:callbackId")
    .replace(/^\/l\/[^/]+/, "/l/:link")
}

/** A 400 with the typed body of every other decode failure (`HttpApiDecodeError`). */
const refused = (issue: { readonly path: ReadonlyArray<string | number>; readonly message: string }) =>
  HttpServerResponse.jsonUnsafe(
    { _tag: "HttpApiDecodeError", issues: [issue], message: issue.message },
    { status: 400 }
  )

/** The media type of a `content-type` header, lowercased, without its parameters. */
const mediaType = (header: string) => (header.split(";")[0] ?? "").trim().toLowerCase()

/**
 * Where a JSON text nests deeper than `maxDepth`: the path (its first `maxPath` keys and indices) to the first value
 * that opens a level past it, or `undefined`. Read from the text in one pass, before anything parses it: `JSON.parse`
 * of a hostile body nested thousands deep costs a hundred times its length (1.3 ms for 10 KB nested 5,000 deep,
 * 9 µs for 10 KB of a string), and Schema's decoding is recursive. Brackets inside strings are skipped with them; a
 * text that is not JSON is left to the parse that follows.
 */
const tooDeep = (text: string, maxDepth: number): ReadonlyArray<string | number> | undefined => {
  /** The key or index of the value being read in each of the first `maxPath` open containers. */
  const path: Array<string | number> = []
  const inArray: Array<boolean> = []
  let depth = 0
  let lastString = ""
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i)
    if (char === QUOTE) {
      const start = i + 1
      let escaped = false
      for (i = start; i < text.length; i++) {
        const inner = text.charCodeAt(i)
        if (inner === QUOTE) break
        if (inner === BACKSLASH) {
          escaped = true
          i++
        }
      }
      // Only a key of the first levels is ever named.
      if (depth > 0 && depth <= maxPath && !inArray[depth - 1]) lastString = keyOf(text.slice(start, i), escaped)
    } else if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
      if (depth >= maxDepth) return path.slice(0, Math.min(depth, maxPath))
      if (depth < maxPath) {
        inArray[depth] = char === OPEN_ARRAY
        path[depth] = 0
      }
      depth++
    } else if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
      if (depth > 0) depth--
    } else if (depth > 0 && depth <= maxPath) {
      if (char === COLON && !inArray[depth - 1]) path[depth - 1] = lastString
      else if (char === COMMA && inArray[depth - 1]) path[depth - 1] = (path[depth - 1] as number) + 1
    }
  }
  return undefined
}

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93
const COLON = 58
const COMMA = 44

/** A key as written between its quotes, unescaped when it has escapes (as written when they are not JSON's). */
const keyOf = (raw: string, escaped: boolean): string => {
  if (!escaped) return raw
  try {
    return JSON.parse(`"${raw}"`) as string
  } catch {
    return raw
  }
}

/** How much of the path to a too-deep value a refusal names. */
const maxPath = 8

/**
 * Reads a JSON body before HttpApi does (the request caches it): a body that outgrows the limit while read is a 413,
 * one that is not JSON or nests deeper than `maxJsonDepth` a typed 400. A body of another media type is left to
 * HttpApi, which answers 415 without reading it.
 */
const checkBody = (request: HttpServerRequest.HttpServerRequest, limits: Limits) =>
  Effect.gen(function*() {
    if (request.method === "GET" || request.method === "HEAD") return undefined
    if (mediaType(request.headers["content-type"] ?? "application/json") !== "application/json") return undefined
    const text = yield* Effect.result(request.text)
    if (Result.isFailure(text)) {
      return HttpServerResponse.jsonUnsafe(new PayloadTooLarge({ limit: limits.maxBodyBytes }), {
        status: 413,
        headers: { connection: "close" }
      })
    }
    if (text.success.length === 0) return undefined
    const path = tooDeep(text.success, limits.maxJsonDepth)
    if (path !== undefined) {
      return refused({
        path: path.map((key) => (typeof key === "string" && key.length > 100 ? `${key.slice(0, 99)}…` : key)),
        message: `the body nests deeper than the server accepts (${limits.maxJsonDepth} levels)`
      })
    }
    const parsed = yield* Effect.result(Effect.try(() => JSON.parse(text.success) as unknown))
    return Result.isFailure(parsed)
      ? refused({ path: [], message: "the request body could not be read as JSON" })
      : undefined
  })

/** The limits of a request's body. */
export interface Limits {
  readonly maxBodyBytes: number
  readonly maxJsonDepth: number
}

export interface Options extends Limits {
  readonly log: boolean
  /** Whether the server is stopping: new requests are refused (503) and their connections closed. */
  readonly stopping: Effect.Effect<boolean>
}

const stoppingResponse = () =>
  HttpServerResponse.jsonUnsafe(
    new TransportFailure({ module: "ParleyServer", method: "request", description: "the server is stopping" }),
    { status: 503, headers: { connection: "close" } }
  )

/** The middleware of every route (a global `HttpRouter` middleware: the session app's routes and 404s too). */
export const layer = (options: Options) =>
  HttpRouter.middleware((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = Date.now()
      const info: RequestInfo = { tenant: undefined, keyId: undefined }
      const length = Number(request.headers["content-length"] ?? "0")
      const stopping = yield* options.stopping
      const exit = yield* (
        stopping
          ? Effect.sync(stoppingResponse)
          : Number.isFinite(length) && length > options.maxBodyBytes
          // The body is never read: the connection closes after the answer.
          ? Effect.sync(() =>
            HttpServerResponse.jsonUnsafe(new PayloadTooLarge({ limit: options.maxBodyBytes }), {
              status: 413,
              headers: { connection: "close" }
            })
          )
          : checkBody(request, options).pipe(
            Effect.flatMap((refused) =>
              refused !== undefined ? Effect.succeed(refused) : app.pipe(Effect.provideService(CurrentRequest, info))
            ),
            Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(options.maxBodyBytes))
          )
      ).pipe(
        // A defect no route answered (a response that did not encode, a failure outside the API): an incident.
        Effect.catchCauseIf(Cause.hasDies, (cause) =>
          Effect.map(
            Incidents.report(cause),
            (incident) => HttpServerResponse.jsonUnsafe(new InternalError({ incident }), { status: 500 })
          )),
        // Every 429 says when to come back (`TooManyRequests` says it itself; a stream slot frees any time).
        Effect.map((response) =>
          response.status === 429 && response.headers["retry-after"] === undefined
            ? HttpServerResponse.setHeader(response, "retry-after", "1")
            : response
        ),
        Effect.exit
      )
      if (options.log) {
        const status = HttpServerError.exitResponse(exit).status
        yield* Effect.logInfo("request").pipe(
          Effect.annotateLogs({
            method: request.method,
            route: routeOf(request.url),
            status,
            ms: Date.now() - started,
            tenant: info.tenant ?? "-",
            key: info.keyId ?? "-"
          })
        )
      }
      return yield* exit
    }), { global: true })
