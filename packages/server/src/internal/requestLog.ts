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

/** The route of a path, ids replaced by their kind (`/sessions/:sessionId/turns/:turnId`). */
export const routeOf = (url: string) => {
  const path = url.split("?")[0] ?? url
  return path
    .replace(/\/ses_[^/]+/g, "/:sessionId")
    .replace(/\/turn_[^/]+/g, "/:turnId")
    .replace(/\/cb_[^/]+/g, "/:callbackId")
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
 * Where a JSON value nests deeper than `maxDepth` (its first `maxPath` keys), walked without recursion: a hostile
 * value is measured before anything recursive (Schema's decoding) sees it.
 */
const tooDeep = (value: unknown, maxDepth: number): ReadonlyArray<string | number> | undefined => {
  const stack: Array<
    { readonly value: unknown; readonly depth: number; readonly path: ReadonlyArray<string | number> }
  > = [{ value, depth: 0, path: [] }]
  while (stack.length > 0) {
    const { depth, path, value: node } = stack.pop()!
    if (node === null || typeof node !== "object") continue
    if (depth >= maxDepth) return path
    const entries: Array<readonly [string | number, unknown]> = Array.isArray(node)
      ? node.map((item, index) => [index, item] as const)
      : Object.entries(node)
    for (const [key, item] of entries) {
      stack.push({ value: item, depth: depth + 1, path: path.length < maxPath ? [...path, key] : path })
    }
  }
  return undefined
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
    const parsed = yield* Effect.result(Effect.try(() => JSON.parse(text.success) as unknown))
    if (Result.isFailure(parsed)) return refused({ path: [], message: "the request body could not be read as JSON" })
    const path = tooDeep(parsed.success, limits.maxJsonDepth)
    return path === undefined ? undefined : refused({
      path: path.map((key) => (typeof key === "string" && key.length > 100 ? `${key.slice(0, 99)}…` : key)),
      message: `the body nests deeper than the server accepts (${limits.maxJsonDepth} levels)`
    })
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
