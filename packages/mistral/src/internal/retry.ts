/**
 * Retries with exponential backoff and jitter on the failures `AiError` marks retryable here (429 with a request
 * quota, 5xx, connection errors), honouring `Retry-After` up to the policy's `maxDelay` (a longer `Retry-After`
 * surfaces the error instead of sleeping). Streams are retried only while nothing has been emitted downstream.
 */
import * as AiError from "effect/ai/AiError"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import type { MistralErrorMetadata, RetryOptions } from "../MistralClient.js"
import * as Errors from "./errors.js"

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

/**
 * 429 and 5xx answers and transport failures are transient; `AiError` says so (`isRetryable`). Any other 4xx is
 * not, nor is a 429 whose `x-ratelimit-limit-req-minute` is `0` (a `QuotaExhaustedError`), nor an answer that could
 * not be read or decoded.
 */
export const isRetryable = (error: AiError.AiError): boolean => error.isRetryable

/** `Retry-After` of the answer the error was made from, in milliseconds from `nowMillis`. */
export const retryAfterMillis = (error: AiError.AiError, nowMillis: number): number | undefined => {
  const reason = error.reason
  const headers = "http" in reason ? reason.http?.response?.headers : undefined
  const delay = Errors.retryAfter(headers, nowMillis)
  return delay === undefined ? undefined : Duration.toMillis(delay)
}

const noted = (
  metadata: { readonly mistral?: MistralErrorMetadata | null | undefined },
  note: string
): { readonly mistral: MistralErrorMetadata } => ({
  mistral: {
    description: `${metadata.mistral?.description ?? "The server asked to wait"} ${note}`,
    correlationId: metadata.mistral?.correlationId ?? null
  }
})

/** The error with a note that it was not retried because the server asked to wait longer than `maxDelay`. */
const describeTooLong = (error: AiError.AiError, retryAfter: number, policy: RetryPolicy): AiError.AiError => {
  const note = `[Retry-After ${Math.ceil(retryAfter / 1000)} s exceeds the retry policy's maxDelay of ${
    Math.ceil(policy.maxDelayMillis / 1000)
  } s; not retried]`
  const reason = error.reason
  switch (reason._tag) {
    case "RateLimitError":
      return AiError.make({
        module: error.module,
        method: error.method,
        reason: new AiError.RateLimitError({
          retryAfter: Duration.millis(retryAfter),
          metadata: noted(reason.metadata, note),
          http: reason.http
        })
      })
    case "InternalProviderError":
      return AiError.make({
        module: error.module,
        method: error.method,
        reason: new AiError.InternalProviderError({
          description: `${reason.description} ${note}`,
          metadata: noted(reason.metadata, note),
          http: reason.http
        })
      })
    default:
      return error
  }
}

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
      if (retryAfter > policy.maxDelayMillis) {
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
        Stream.onFirst(() => {
          emitted = true
          return Effect.void
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
