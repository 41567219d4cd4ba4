/**
 * Mapping of HTTP failures to `AiError`, keeping the status, headers and raw body.
 */
import * as AiError from "effect/ai/AiError"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export const moduleName = "MistralClient"

const redactedHeaders = new Set(["authorization", "x-api-key", "cookie", "set-cookie", "proxy-authorization"])

const redactHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    out[name] = redactedHeaders.has(name.toLowerCase()) ? "<redacted>" : value
  }
  return out
}

export const requestDetails = (
  request: HttpClientRequest.HttpClientRequest
): typeof AiError.HttpRequestDetails.Type => ({
  method: request.method,
  url: request.url,
  urlParams: request.urlParams,
  hash: request.hash,
  headers: redactHeaders(request.headers)
})

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

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
 * Reads the body of a non-2xx response and fails with an `HttpResponseError` that carries the status, the
 * headers (rate-limit headers, `Retry-After`, `mistral-correlation-id`) and the raw body text.
 */
export const statusError = (options: {
  readonly method: string
  readonly request: HttpClientRequest.HttpClientRequest
  readonly response: HttpClientResponse.HttpClientResponse
}): Effect.Effect<never, AiError.HttpResponseError> =>
  options.response.text.pipe(
    Effect.orElseSucceed(() => ""),
    Effect.flatMap((body) => {
      const correlationId = options.response.headers["mistral-correlation-id"]
      const description = describeBody(options.response.status, body) +
        (correlationId === undefined ? "" : ` [mistral-correlation-id: ${correlationId}]`)
      return Effect.fail(
        new AiError.HttpResponseError({
          module: moduleName,
          method: options.method,
          reason: "StatusCode",
          request: requestDetails(options.request),
          response: { status: options.response.status, headers: redactHeaders(options.response.headers) },
          body,
          description
        })
      )
    })
  )

export const fromClientError = (method: string) => (error: HttpClientError.HttpClientError): AiError.AiError => {
  if (error._tag === "RequestError") {
    return AiError.HttpRequestError.fromRequestError({ module: moduleName, method, error })
  }
  return new AiError.HttpResponseError({
    module: moduleName,
    method,
    reason: error.reason,
    request: requestDetails(error.request),
    response: { status: error.response.status, headers: redactHeaders(error.response.headers) },
    description: error.description ??
      (error.reason === "Decode" ? "The response body could not be read (the connection may have been cut)" : undefined)
  })
}
