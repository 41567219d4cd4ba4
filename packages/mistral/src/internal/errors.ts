/**
 * Mapping of HTTP failures to `AiError`: a non-2xx answer becomes the reason its status means (400 / 404 / 409 / 422
 * `InvalidRequestError`, 401 / 403 `AuthenticationError`, 429 `RateLimitError` or `QuotaExhaustedError`, 5xx
 * `InternalProviderError`, any other status `UnknownError`), keeping the status, the headers (secrets redacted), the
 * raw body and a description of what the server said (also under `metadata.mistral`).
 */
import * as AiError from "effect/ai/AiError"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Headers from "effect/http/Headers"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { MistralErrorMetadata } from "../MistralClient.js"

export const moduleName = "MistralClient"

const REDACTED_HEADERS: ReadonlyArray<string> = [
  "authorization",
  "x-api-key",
  "cookie",
  "set-cookie",
  "proxy-authorization"
]

export const httpContext = (
  response: HttpClientResponse.HttpClientResponse,
  body?: string
): typeof AiError.HttpContext.Type => ({
  response: { status: response.status, headers: Headers.redact(response.headers, REDACTED_HEADERS) },
  ...(body === undefined ? {} : { body })
})

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const parseJson: (text: string) => Option.Option<unknown> = Schema.decodeOption(
  Schema.fromJsonString(Schema.Unknown)
)

/** Renders `detail` / `message` from any of the documented error bodies (string, object or array). */
const renderMessage = (u: unknown): string | undefined => {
  if (typeof u === "string") {
    return u.length > 0 ? u : undefined
  }
  if (Array.isArray(u)) {
    const items = u.map((item) => {
      if (isRecord(item) && typeof item.msg === "string") {
        const loc = Array.isArray(item.loc) ? ` at ${item.loc.join(".")}` : ""
        const type = typeof item.type === "string" ? ` [${item.type}]` : ""
        return `${item.msg}${loc}${type}`
      }
      return renderMessage(item)
    }).filter((s): s is string => s !== undefined)
    return items.length > 0 ? items.join("; ") : undefined
  }
  if (isRecord(u)) {
    return renderMessage(u.message) ?? renderMessage(u.detail) ?? renderMessage(u.error)
  }
  return undefined
}

const describeJson = (prefix: string, value: unknown): string => {
  const envelope = isRecord(value) && isRecord(value.error) ? value.error : value
  let message = renderMessage(envelope)
  if (message !== undefined) {
    const nested = parseJson(message)
    if (Option.isSome(nested) && typeof nested.value === "object") {
      message = renderMessage(nested.value) ?? message
    }
  }
  const extras: Array<string> = []
  if (isRecord(envelope)) {
    if (typeof envelope.type === "string") extras.push(`type: ${envelope.type}`)
    if (typeof envelope.code === "string" || typeof envelope.code === "number") extras.push(`code: ${envelope.code}`)
  }
  return `${prefix}${message === undefined ? "" : `: ${message}`}${extras.length > 0 ? ` (${extras.join(", ")})` : ""}`
}

/**
 * Builds a description from an error body. Accepts Mistral's canonical envelope, its legacy variants (message as
 * string, object or JSON string; `detail`; integer `code`) and the OpenAI-style `{"error": {...}}` envelope. Never
 * fails: an unknown body is described by its status only.
 */
export const describeBody = (status: number, body: string): string => {
  const json = parseJson(body)
  const prefix = `Mistral API responded with status ${status}`
  if (Option.isNone(json)) {
    return body.length > 0 ? `${prefix}: ${body.slice(0, 500)}` : prefix
  }
  return describeJson(prefix, json.value)
}

/**
 * Describes an error reported inside a 200 event stream (a `data:` event holding Mistral's error envelope
 * `{"object": "error", ...}` or an OpenAI-style `{"error": {...}}`), in the same terms as `describeBody`.
 */
export const describeStreamError = (data: string): string => {
  const prefix = "The server reported an error inside the stream"
  const json = parseJson(data)
  return Option.isNone(json) ? `${prefix}: ${data.slice(0, 500)}` : describeJson(prefix, json.value)
}

/**
 * `Retry-After` (delta-seconds or an HTTP date) as a duration from `nowMillis`, or `undefined` when the header is
 * absent or unreadable.
 */
export const retryAfter = (
  headers: Readonly<Record<string, unknown>> | undefined,
  nowMillis: number
): Duration.Duration | undefined => {
  const value = headers?.["retry-after"]
  if (typeof value !== "string") return undefined
  const parsed = Headers.parseRetryAfter(value)
  if (Result.isFailure(parsed)) return undefined
  return parsed.success._tag === "Duration"
    ? parsed.success.duration
    : Duration.millis(Math.max(0, DateTime.toEpochMillis(parsed.success.dateTime) - nowMillis))
}

/** The reason a non-2xx status means. */
export const reasonFromStatus = (options: {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly http: typeof AiError.HttpContext.Type
  readonly metadata: MistralErrorMetadata
  readonly nowMillis: number
}): AiError.AiErrorReason => {
  const { http, status } = options
  const description = options.metadata.description
  const metadata = { mistral: options.metadata }
  switch (status) {
    case 400:
    case 404:
    case 409:
    case 422:
      return new AiError.InvalidRequestError({ description, metadata, http })
    case 401:
      return new AiError.AuthenticationError({ kind: "InvalidKey", description, metadata, http })
    case 403:
      return new AiError.AuthenticationError({ kind: "InsufficientPermissions", description, metadata, http })
    case 429:
      // A request quota of 0 per minute: no quota at all, so waiting does not help.
      if (options.headers["x-ratelimit-limit-req-minute"] === "0") {
        return new AiError.QuotaExhaustedError({ metadata, http })
      }
      return new AiError.RateLimitError({
        retryAfter: retryAfter(options.headers, options.nowMillis),
        metadata,
        http
      })
    default:
      return status >= 500
        ? new AiError.InternalProviderError({ description, metadata, http })
        : new AiError.UnknownError({ description, metadata, http })
  }
}

/**
 * Reads the body of a non-2xx response and fails with the `AiError` its status means, carrying the status, the
 * headers (rate-limit headers, `Retry-After`, `mistral-correlation-id`) and the raw body text.
 */
export const statusError = (
  method: string,
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<never, AiError.AiError> =>
  Effect.gen(function*() {
    const body = yield* Effect.orElseSucceed(response.text, () => "")
    const nowMillis = yield* Clock.currentTimeMillis
    const correlationId = response.headers["mistral-correlation-id"]
    const description = describeBody(response.status, body) +
      (correlationId === undefined ? "" : ` [mistral-correlation-id: ${correlationId}]`)
    return yield* AiError.make({
      module: moduleName,
      method,
      reason: reasonFromStatus({
        status: response.status,
        headers: response.headers,
        http: httpContext(response, body),
        metadata: { description, correlationId: correlationId ?? null },
        nowMillis
      })
    })
  })

/**
 * A failure of the HTTP client itself: the request never got an answer (`NetworkError`), or the answer's body could
 * not be read (`InvalidResponseError`, the connection may have been cut).
 */
export const fromClientError = (method: string) => (error: HttpClientError.HttpClientError): AiError.AiError => {
  const reason = error.reason
  switch (reason._tag) {
    case "TransportError":
    case "EncodeError":
    case "InvalidUrlError":
      return AiError.make({ module: moduleName, method, reason: AiError.NetworkError.fromRequestError(reason) })
    case "DecodeError":
    case "EmptyBodyError":
    case "StatusCodeError": {
      const description = reason._tag === "DecodeError"
        ? "The response body could not be read (the connection may have been cut)"
        : reason._tag === "EmptyBodyError"
        ? "The response had no body"
        : `Unexpected status ${reason.response.status}`
      return AiError.make({
        module: moduleName,
        method,
        reason: new AiError.InvalidResponseError({
          description: reason.description === undefined ? description : `${description}: ${reason.description}`,
          http: httpContext(reason.response)
        })
      })
    }
  }
}
