/**
 * Implementation of `MistralClient.make`.
 */
import * as AiError from "effect/ai/AiError"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import { identity } from "effect/Function"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { RetryOptions, Service } from "../MistralClient.js"
import { MistralConfig } from "../MistralConfig.js"
import * as Errors from "./errors.js"
import * as Retry from "./retry.js"
import * as Wire from "./wire.js"

const decodeResponse = Schema.decodeUnknownEffect(Wire.ChatCompletionResponse)
const decodeChunk = Schema.decodeUnknownEffect(Schema.fromJsonString(Wire.ChatCompletionChunk))

const hasFinishReason = (chunk: Wire.ChatCompletionChunk): boolean =>
  (chunk.choices ?? []).some((choice) => typeof choice.finish_reason === "string" && choice.finish_reason.length > 0)

export const make = (options: {
  readonly httpClient: HttpClient.HttpClient
  readonly apiKey: Redacted.Redacted | undefined
  readonly apiUrl: string
  readonly flavour: Wire.Flavour
  readonly transformClient: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
  readonly retry: RetryOptions | false | undefined
}): Service => {
  const policy = Retry.resolvePolicy(options.retry)
  const apiUrl = options.apiUrl.replace(/\/+$/, "")
  const apiKey = options.apiKey

  const baseClient = options.httpClient.pipe(
    HttpClient.mapRequest((request) =>
      request.pipe(
        HttpClientRequest.prependUrl(apiUrl),
        apiKey === undefined ? identity : HttpClientRequest.bearerToken(apiKey)
      )
    ),
    options.transformClient ?? identity
  )

  const currentClient = Effect.map(
    MistralConfig.getOrUndefined,
    (config) => config?.transformClient === undefined ? baseClient : config.transformClient(baseClient)
  )

  /** Sends the request; fails with the `AiError` the status means on a non-2xx answer. */
  const send = (
    method: string,
    body: Wire.ChatCompletionRequest,
    accept: string
  ): Effect.Effect<HttpClientResponse.HttpClientResponse, AiError.AiError> =>
    Effect.flatMap(currentClient, (client) => {
      const request = HttpClientRequest.post("/chat/completions").pipe(
        HttpClientRequest.bodyJsonUnsafe(body),
        HttpClientRequest.accept(accept)
      )
      return client.execute(request).pipe(
        Effect.mapError(Errors.fromClientError(method)),
        Effect.flatMap((response) =>
          response.status >= 200 && response.status < 300
            ? Effect.succeed(response)
            : Errors.statusError(method, response)
        )
      )
    })

  const malformed = (
    method: string,
    description: string,
    response?: HttpClientResponse.HttpClientResponse
  ): AiError.AiError =>
    AiError.make({
      module: Errors.moduleName,
      method,
      reason: new AiError.InvalidResponseError({
        description,
        ...(response === undefined ? {} : { http: Errors.httpContext(response) })
      })
    })

  const createChatCompletion = (
    request: Wire.ChatCompletionRequest
  ): Effect.Effect<Wire.ChatCompletionResponse, AiError.AiError> => {
    const method = "createChatCompletion"
    const attempt = send(method, { ...request, stream: false }, "application/json").pipe(
      Effect.flatMap((response) =>
        response.json.pipe(
          Effect.mapError(Errors.fromClientError(method)),
          Effect.flatMap((json) =>
            Effect.mapError(
              decodeResponse(json),
              (error) => malformed(method, `Unexpected chat completion body: ${error.message}`, response)
            )
          )
        )
      )
    )
    return Retry.retryEffect(policy, attempt)
  }

  const decodeEvents = (
    method: string,
    response: HttpClientResponse.HttpClientResponse
  ): Stream.Stream<Wire.ChatCompletionChunk, AiError.AiError> =>
    Stream.suspend(() => {
      let finished = false
      return response.stream.pipe(
        Stream.mapError(Errors.fromClientError(method)),
        Stream.decodeText(),
        Stream.pipeThroughChannel(Sse.decode()),
        Stream.mapError((error) =>
          AiError.isAiError(error)
            ? error
            : malformed(
              method,
              `Unreadable event stream: ${error._tag === "Retry" ? "unexpected retry" : error.message}`
            )
        ),
        Stream.filter((event) => event.data.trim().length > 0),
        Stream.takeWhile((event) => {
          if (event.data.trim() === "[DONE]") {
            finished = true
            return false
          }
          return true
        }),
        Stream.mapEffect((event) =>
          decodeChunk(event.data).pipe(
            Effect.mapError((error) => malformed(method, `Undecodable stream chunk: ${error.message}`)),
            Effect.flatMap((chunk) => {
              // Mistral's error envelope (`{"object": "error", ...}`) or vLLM / Ollama's `{"error": {...}}`.
              const isEnvelope = chunk.object?.toLowerCase() === "error"
              if (isEnvelope || (chunk.error !== undefined && chunk.error !== null)) {
                return Effect.fail(
                  AiError.make({
                    module: Errors.moduleName,
                    method,
                    reason: new AiError.UnknownError({ description: Errors.describeStreamError(event.data) })
                  })
                )
              }
              if (hasFinishReason(chunk)) finished = true
              return Effect.succeed(chunk)
            })
          )
        ),
        Stream.concat(Stream.suspend(() =>
          finished
            ? Stream.empty
            : Stream.fail(malformed(method, "The stream ended before `data: [DONE]` or a finish reason"))
        ))
      )
    })

  const createChatCompletionStream = (
    request: Wire.ChatCompletionRequest
  ): Stream.Stream<Wire.ChatCompletionChunk, AiError.AiError> => {
    const method = "createChatCompletionStream"
    const body: Wire.ChatCompletionRequest = options.flavour === "compat"
      ? { ...request, stream: true, stream_options: request.stream_options ?? { include_usage: true } }
      : { ...request, stream: true }
    const attempt = Stream.unwrap(
      Effect.map(send(method, body, "text/event-stream"), (response) => decodeEvents(method, response))
    )
    return Retry.retryStream(policy, attempt)
  }

  return { flavour: options.flavour, createChatCompletion, createChatCompletionStream }
}
