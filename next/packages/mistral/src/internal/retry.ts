/**
 * Retries with exponential backoff and jitter on 429 / 5xx / connection errors, honouring `Retry-After` up to the
 * policy's `maxDelay` (a longer `Retry-After` surfaces the error instead of sleeping).
 * Streams are retried only while nothing has been emitted downstream.
 */
import * as AiError from "effect/ai/AiError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import type { RetryOptions } from "../MistralClient.js"

export interface RetryPolicy {
  readonly maxRetries: number
  readonly baseDelayMillis: number
  readonly maxDelayMillis: number
}

export const resolvePolicy = (options: RetryOptions | false | undefined): RetryPolicy =>
  options === false
    ? { maxRetries: 0, baseDelayMillis: 0, maxDelayMillis: 0 }
    : {
      maxRetries: options?.maxRetries ?? 4,
      baseDelayMillis: Duration.toMillis(options?.baseDelay ?? Duration.millis(500)),
      maxDelayMillis: Duration.toMillis(options?.maxDelay ?? Duration.seconds(30))
    }

const header = (error: AiError.HttpResponseError, name: string): string | undefined => error.response.headers[name]

/**
 * 429 and 5xx answers and transport failures are transient. Any other 4xx is not, and neither is a 429 whose
 * `x-ratelimit-limit-req-minute` is `0` (no quota at all).
 */
export const isRetryable = (error: AiError.AiError): boolean => {
  switch (error._tag) {
    case "HttpRequestError":
      return error.reason === "Transport"
    case "HttpResponseError": {
      if (error.reason !== "StatusCode") return false
      const status = error.response.status
      if (status === 429) return header(error, "x-ratelimit-limit-req-minute") !== "0"
      return status >= 500
    }
    default:
      return false
  }
}

/**
 * `Retry-After` as delta-seconds or as an HTTP date.
 */
export const retryAfterMillis = (error: AiError.AiError, nowMillis: number): number | undefined => {
  if (error._tag !== "HttpResponseError") return undefined
  const value = header(error, "retry-after")?.trim()
  if (value === undefined || value.length === 0) return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMillis)
}

const describeTooLong = (error: AiError.HttpResponseError, retryAfter: number, policy: RetryPolicy) =>
  new AiError.HttpResponseError({
    module: error.module,
    method: error.method,
    reason: error.reason,
    request: error.request,
    response: error.response,
    body: error.body,
    description: `${error.description ?? `Status ${error.response.status}`} [Retry-After ${
      Math.ceil(retryAfter / 1000)
    } s exceeds the retry policy's maxDelay of ${Math.ceil(policy.maxDelayMillis / 1000)} s; not retried]`
  })

/**
 * The delay before the next attempt: `Retry-After` when present, else exponential backoff with jitter (capped at
 * `maxDelay`). A `Retry-After` longer than `maxDelay` is not waited for: the error is surfaced (with its status and
 * a note) instead of sleeping for as long as the server asks.
 */
export const delayFor = (
  policy: RetryPolicy,
  error: AiError.AiError,
  attempt: number
): Effect.Effect<number, AiError.AiError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const retryAfter = retryAfterMillis(error, now)
    if (retryAfter !== undefined) {
      if (retryAfter > policy.maxDelayMillis && error._tag === "HttpResponseError") {
        return yield* describeTooLong(error, retryAfter, policy)
      }
      return retryAfter
    }
    const backoff = Math.min(policy.maxDelayMillis, policy.baseDelayMillis * 2 ** attempt)
    const jitter = yield* Random.next
    return Math.round(backoff / 2 + jitter * backoff / 2)
  })

export const retryEffect = <A>(
  policy: RetryPolicy,
  effect: Effect.Effect<A, AiError.AiError>
): Effect.Effect<A, AiError.AiError> => {
  const loop = (attempt: number): Effect.Effect<A, AiError.AiError> =>
    Effect.catch(effect, (error) =>
      attempt < policy.maxRetries && isRetryable(error)
        ? Effect.flatMap(delayFor(policy, error, attempt), (millis) =>
          Effect.andThen(Effect.sleep(Duration.millis(millis)), loop(attempt + 1)))
        : Effect.fail(error))
  return loop(0)
}

/**
 * Re-runs `make` after a transient failure, but only if the failed attempt emitted nothing: once an element went
 * downstream, the error is surfaced as it is.
 */
export const retryStream = <A>(
  policy: RetryPolicy,
  make: Stream.Stream<A, AiError.AiError>
): Stream.Stream<A, AiError.AiError> => {
  const loop = (attempt: number): Stream.Stream<A, AiError.AiError> =>
    Stream.suspend(() => {
      let emitted = false
      return make.pipe(
        Stream.mapChunks((chunk) => {
          if (chunk.length > 0) emitted = true
          return chunk
        }),
        Stream.catch((error) =>
          !emitted && attempt < policy.maxRetries && isRetryable(error)
            ? Stream.unwrap(
              Effect.map(
                Effect.flatMap(delayFor(policy, error, attempt), (millis) => Effect.sleep(Duration.millis(millis))),
                () => loop(attempt + 1)
              )
            )
            : Stream.fail(error)
        )
      )
    })
  return loop(0)
}
