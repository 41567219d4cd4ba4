import { Answer } from "@parley/core/Answer"
import * as Ids from "@parley/core/Ids"
import { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import {
  AnswerMismatch,
  CallbackNotOpen,
  LimitExceeded,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "@parley/core/ParleyError"
import * as Principal from "@parley/core/Principal"
import { MessageTooLong, PayloadTooLarge, ProtocolApi, SendMessage, TooManyRequests } from "@parley/core/ProtocolApi"
import type { AnswerRequest, Service } from "@parley/core/Transport"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as EventStream from "./eventStream.js"

export interface Options {
  readonly url: string | URL
  readonly apiKey: Redacted.Redacted<string> | string
  readonly reconnect: Schedule.Schedule<unknown, unknown>
  readonly sendTimeout: Duration.Input
  readonly sendRetryFor: Duration.Input
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

const isSessionId = Schema.is(SessionId)
const isTurnId = Schema.is(TurnId)
const isCallbackId = Schema.is(CallbackId)
const decodeAnswer = Schema.decodeUnknownResult(Answer)
const decodePrincipal = Schema.decodeUnknownResult(Principal.Principal)

/**
 * `schedule`, started over once `after` has passed since it began (or last started over): the step that finds it so is
 * taken by a fresh copy of `schedule` (Effect 3's `Schedule.resetAfter`, which Effect 4 does not have).
 */
export const resetAfter = <Output, Input, Error, Env>(
  schedule: Schedule.Schedule<Output, Input, Error, Env>,
  after: Duration.Input
): Schedule.Schedule<Output, Input, Error, Env> => {
  const millis = Duration.toMillis(Duration.fromInputUnsafe(after))
  return Schedule.fromStep(Effect.map(Schedule.toStep(schedule), (first) => {
    let step = first
    let start: number | undefined
    return (now: number, input: Input) => {
      if (start === undefined) start = now
      if (now - start < millis) return step(now, input)
      start = now
      return Effect.flatMap(Schedule.toStep(schedule), (fresh) => {
        step = fresh
        return fresh(now, input)
      })
    }
  }))
}

/** The tags of the errors a method may fail with: any other error of a response is a `TransportFailure`. */
type Tagged = { readonly _tag: string }

const describe = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
    return error.message
  }
  return String(error)
}

/** The server's refusal of a request over one of its limits, as the typed `LimitExceeded`. */
const limitOf = (method: string, error: unknown): LimitExceeded | undefined => {
  const at = { module: "HttpTransport", method }
  if (error instanceof PayloadTooLarge) {
    return new LimitExceeded({ ...at, limit: "bodyBytes", max: error.limit, description: error.message })
  }
  if (error instanceof MessageTooLong) {
    return new LimitExceeded({ ...at, limit: "messageLength", max: error.limit, description: error.message })
  }
  if (error instanceof TooManyRequests) {
    return new LimitExceeded({
      ...at,
      limit: error.what === "requests" ? "requestsInFlight" : "sessionsPerMinute",
      max: error.limit,
      retryAfter: error.retryAfter,
      description: error.message
    })
  }
  return undefined
}

/**
 * Keeps the errors whose tag is in `keep` (the method's typed errors, decoded from the server's body), turns the
 * server's refusals for its limits into `LimitExceeded` and every other error (a refused key, a decode failure, a
 * network error) into a `TransportFailure`.
 */
const typed = <K extends string>(method: string, keep: ReadonlyArray<K>) =>
<A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Extract<E, { readonly _tag: K }> | LimitExceeded | TransportFailure, R> =>
  Effect.mapError(effect, (error): Extract<E, { readonly _tag: K }> | LimitExceeded | TransportFailure => {
    if (
      typeof error === "object" && error !== null && "_tag" in error &&
      (keep as ReadonlyArray<string>).includes((error as Tagged)._tag)
    ) {
      return error as Extract<E, { readonly _tag: K }>
    }
    if (error instanceof TransportFailure) return error
    return limitOf(method, error) ??
      new TransportFailure({ module: "HttpTransport", method, description: describe(error) })
  })

/** The statuses of a gateway or of a server that is unavailable: the request may or may not have reached the engine. */
const retriedStatuses: ReadonlySet<number> = new Set([502, 503, 504])

/** No response within `sendTimeout`. */
class SendTimedOut extends Data.TaggedError("SendTimedOut")<{ readonly message: string }> {}

/**
 * Whether a failed POST may be sent again with its request id: nothing came back (a dropped connection, a timeout), or
 * a gateway or the server said it is unavailable (502, 503 — the server's `TransportFailure` too — or 504). An error
 * the server decided (a 4xx, a typed error) is final.
 */
const retriable = (error: unknown): boolean => {
  if (error instanceof SendTimedOut) return true
  if (!HttpClientError.isHttpClientError(error)) return false
  switch (error.reason._tag) {
    case "TransportError":
      return true
    case "StatusCodeError":
      return retriedStatuses.has(error.reason.response.status)
    default:
      return false
  }
}

export const make = (options: Options) =>
  Effect.gen(function*() {
    const apiKey = typeof options.apiKey === "string" ? options.apiKey : Redacted.value(options.apiKey)
    const base = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest(HttpClientRequest.bearerToken(apiKey)),
      options.transformClient ?? ((client) => client)
    )
    const client = yield* HttpApiClient.makeWith(ProtocolApi, { httpClient: base, baseUrl: options.url })
    // Sends and snapshots see a gateway's 502/503/504 (whatever its body) as a `ResponseError`, which they retry.
    const sends = yield* HttpApiClient.makeWith(ProtocolApi, {
      httpClient: HttpClient.filterStatus(base, (status) => !retriedStatuses.has(status)),
      baseUrl: options.url
    })
    const streamOptions: EventStream.Options = {
      client: base.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(String(options.url)))),
      reconnect: options.reconnect
    }

    /**
     * The answers to one tree go one at a time, in the order the program gave them (as in-process, where each is
     * committed before the call returns): concurrent requests would race.
     */
    const queues = new Map<string, { readonly lock: Semaphore.Semaphore; users: number }>()
    const inOrder = <A, E>(sessionId: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        let queue = queues.get(sessionId)
        if (queue === undefined) {
          queue = { lock: Semaphore.makeUnsafe(1), users: 0 }
          queues.set(sessionId, queue)
        }
        const entry = queue
        entry.users += 1
        return entry.lock.withPermits(1)(effect).pipe(
          Effect.ensuring(Effect.sync(() => {
            entry.users -= 1
            if (entry.users === 0) queues.delete(sessionId)
          }))
        )
      })

    /**
     * A request sent again while nothing decided came back (`retriable`: no connection, a dropped one, a 502/503/504, no
     * answer within `sendTimeout`), under `reconnect` for at most `sendRetryFor`: a POST that names its request (the
     * server answers a repeated id as it answered the first), or the snapshot of a turn (it changes nothing; it is the
     * first request of `Turn.result`, which so rides out a server that is briefly down, as its stream's reconnections
     * do).
     */
    const resent = <A, E>(post: Effect.Effect<A, E>) =>
      post.pipe(
        Effect.timeoutOrElse({
          duration: options.sendTimeout,
          orElse: () => Effect.fail(new SendTimedOut({ message: "no response in time" }))
        }),
        Effect.retry({
          schedule: Schedule.upTo(options.reconnect, { duration: options.sendRetryFor }),
          while: retriable
        })
      )

    const sessionNotFound = (method: string, sessionId: unknown) =>
      new SessionNotFound({ module: "HttpTransport", method, sessionId: String(sessionId) })

    /**
     * `error`, found before anything was sent, once the server says the session is there (and the key's tenant's): the
     * in-process transport looks the session up before it judges the rest of a request.
     */
    const afterSession = <E>(method: string, sessionId: SessionId, error: E) =>
      client.sessions.get({ params: { sessionId } }).pipe(
        typed(method, ["SessionNotFound"]),
        Effect.andThen(Effect.fail(error))
      )

    const service: Service = {
      createSession: (agent) =>
        client.sessions.create({ payload: agent }).pipe(
          typed("createSession", ["AgentInvalid", "PolicyInvalid"])
        ),
      getSession: (sessionId) =>
        isSessionId(sessionId)
          ? client.sessions.get({ params: { sessionId } }).pipe(typed("getSession", ["SessionNotFound"]))
          : Effect.fail(sessionNotFound("getSession", sessionId)),
      getTurn: (sessionId, turnId) => service.snapshot(sessionId, turnId).pipe(Effect.map((snapshot) => snapshot.turn)),
      sendMessage: (sessionId, input, sendOptions) =>
        Effect.gen(function*() {
          // Every POST names its request: a retry with the same id finds the turn the first one queued. A malformed
          // one is refused first, as in-process.
          const requestId = sendOptions?.requestId === undefined
            ? yield* Ids.newRequestId
            : yield* Ids.requestId(sendOptions.requestId)
          if (!isSessionId(sessionId)) return yield* sessionNotFound("sendMessage", sessionId)
          const payload = new SendMessage({ input, requestId })
          return yield* resent(sends.turns.send({ params: { sessionId }, payload })).pipe(
            typed("sendMessage", ["SessionNotFound", "InvalidId"])
          )
        }),
      events: (sessionId, from) =>
        isSessionId(sessionId)
          ? EventStream.events(streamOptions, sessionId, from)
          : Stream.fail(sessionNotFound("events", sessionId)),
      subscribe: (sessionId, from) =>
        isSessionId(sessionId)
          ? EventStream.subscribe(streamOptions, sessionId, from)
          : Effect.fail(sessionNotFound("subscribe", sessionId)),
      snapshot: (sessionId, turnId) => {
        if (!isSessionId(sessionId)) return Effect.fail(sessionNotFound("snapshot", sessionId))
        if (!isTurnId(turnId)) {
          // As in-process: an unknown session first.
          return afterSession(
            "snapshot",
            sessionId,
            new TurnNotFound({ module: "HttpTransport", method: "snapshot", sessionId, turnId: String(turnId) })
          )
        }
        return resent(sends.turns.get({ params: { sessionId, turnId } })).pipe(
          typed("snapshot", ["SessionNotFound", "TurnNotFound"])
        )
      },
      answer: (request) =>
        Effect.gen(function*() {
          // Judged in the in-process transport's order: the request id, the session, the turn and callback ids, the
          // answer, who answers. What fails before anything is sent is reported once the session is known to exist.
          const fields = (typeof request === "object" && request !== null ? request : {}) as Partial<AnswerRequest>
          const { callbackId, sessionId, turnId } = fields
          // As a send: every answer names its request (the caller's id, or one made up here), so it is sent again on a
          // drop, and a retry of the answer that won is accepted, not reported as already answered.
          const requestId = fields.requestId === undefined
            ? yield* Ids.newRequestId
            : yield* Ids.requestId(fields.requestId)
          if (!isSessionId(sessionId)) return yield* sessionNotFound("answer", sessionId)
          if (!isTurnId(turnId)) {
            return yield* afterSession(
              "answer",
              sessionId,
              new TurnNotFound({ module: "HttpTransport", method: "answer", sessionId, turnId: String(turnId) })
            )
          }
          if (!isCallbackId(callbackId)) {
            return yield* afterSession(
              "answer",
              sessionId,
              new CallbackNotOpen({ module: "HttpTransport", method: "answer", callbackId: String(callbackId) })
            )
          }
          // An answer that is no `Answer` at all never leaves the process (as in-process: nothing is sent).
          const answer = decodeAnswer(fields.answer)
          if (Result.isFailure(answer)) {
            return yield* afterSession(
              "answer",
              sessionId,
              new AnswerMismatch({
                module: "HttpTransport",
                method: "answer",
                callbackId,
                reason: `the answer is not an Answer: ${answer.failure.message}`
              })
            )
          }
          const answeredBy = fields.answeredBy === undefined ? undefined : decodePrincipal(fields.answeredBy)
          if (answeredBy !== undefined && Result.isFailure(answeredBy)) {
            return yield* afterSession(
              "answer",
              sessionId,
              new AnswerMismatch({
                module: "HttpTransport",
                method: "answer",
                callbackId,
                reason: `answeredBy does not decode: ${answeredBy.failure.message}`
              })
            )
          }
          // Who answers travels as the client's claim; the server records it beside the key it checked.
          const by = answeredBy === undefined ? undefined : Principal.claimed(answeredBy.success)
          const claim = by?._tag === "Handler"
            ? { handler: by.name }
            : by?._tag === "Client" && by.label !== undefined
            ? { label: by.label }
            : {}
          const body = {
            params: { sessionId, turnId, callbackId },
            query: { ...claim, requestId },
            payload: answer.success
          }
          return yield* inOrder(sessionId, resent(sends.callbacks.answer(body)))
        }).pipe(
          typed("answer", [
            "InvalidId",
            "AnswerMismatch",
            "NotAllowedToAnswer",
            "CallbackNotOpen",
            "CallbackAlreadyAnswered",
            "SessionNotFound",
            "TurnNotFound"
          ])
        ),
      grants: (sessionId) =>
        isSessionId(sessionId)
          ? client.sessions.grants({ params: { sessionId } }).pipe(typed("grants", ["SessionNotFound"]))
          : Effect.fail(sessionNotFound("grants", sessionId)),
      revokeGrant: (request) => {
        const { grantId, revokedBy, sessionId } = request
        if (!isSessionId(sessionId)) return Effect.fail(sessionNotFound("revokeGrant", sessionId))
        const by = revokedBy === undefined ? undefined : Principal.claimed(revokedBy)
        const query = by?._tag === "Client" && by.label !== undefined ? { label: by.label } : {}
        return client.sessions.revokeGrant({ params: { sessionId, grantId: String(grantId) }, query }).pipe(
          typed("revokeGrant", ["GrantNotFound", "SessionNotFound"])
        )
      },
      cancel: (sessionId) =>
        isSessionId(sessionId)
          ? client.sessions.cancel({ params: { sessionId } }).pipe(typed("cancel", ["SessionNotFound"]))
          : Effect.fail(sessionNotFound("cancel", sessionId)),
      listOpen: (filter) =>
        client.callbacks.listOpen({
          // The query's keys are optional, not undefined: a filter's missing field is left out.
          query: {
            ...(filter?.sessionId === undefined ? {} : { sessionId: filter.sessionId }),
            ...(filter?.kind === undefined ? {} : { kind: filter.kind })
          }
        }).pipe(
          typed("listOpen", [])
        )
    }
    return service
  })
