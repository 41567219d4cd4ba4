/**
 * The middleware around every request: the body limit (413 before anything is read, from `Content-Length`; a chunked
 * body is cut at the same size while read) and one structured log line per request — method, route, status, ms,
 * tenant and key id. Never headers, bodies or query strings: API keys, sign-in answers and answer payloads never
 * reach the log.
 */
import { TransportFailure } from "@parley/core/ParleyError"
import { PayloadTooLarge } from "@parley/core/ProtocolApi"
import * as ByteSize from "effect/ByteSize"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"

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

/**
 * A body that is not JSON fails before HttpApi decodes it, with an empty 400: it gets the typed body of every other
 * decode failure (`HttpApiDecodeError`).
 */
const malformedBody = () =>
  HttpServerResponse.jsonUnsafe(
    { _tag: "HttpApiDecodeError", issues: [], message: "the request body could not be read as JSON" },
    { status: 400 }
  )

/**
 * Reads a JSON body before HttpApi does (the request caches it): a body that is not JSON gets a typed 400, one that
 * outgrows the limit while read a 413.
 */
const checkBody = (request: HttpServerRequest.HttpServerRequest, maxBodyBytes: number) =>
  Effect.gen(function*() {
    if (request.method === "GET" || request.method === "HEAD") return undefined
    const text = yield* Effect.result(request.text)
    if (Result.isFailure(text)) {
      return HttpServerResponse.jsonUnsafe(new PayloadTooLarge({ limit: maxBodyBytes }), { status: 413 })
    }
    if (text.success.length === 0) return undefined
    const parsed = yield* Effect.result(Effect.try(() => JSON.parse(text.success) as unknown))
    return Result.isFailure(parsed) ? malformedBody() : undefined
  })

export interface Options {
  readonly maxBodyBytes: number
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
          : checkBody(request, options.maxBodyBytes).pipe(
            Effect.flatMap((refused) =>
              refused !== undefined ? Effect.succeed(refused) : app.pipe(Effect.provideService(CurrentRequest, info))
            ),
            Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(options.maxBodyBytes))
          )
      ).pipe(Effect.exit)
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
