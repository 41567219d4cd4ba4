/**
 * The transport a server serves, with the limits of a transport beneath it passed on as the server's own.
 */
import type { LimitExceeded } from "@parley/core/ParleyError"
import { PayloadTooLarge, TooManyRequests } from "@parley/core/ProtocolApi"
import type * as Transport from "@parley/core/Transport"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"

/** A method of `Transport.Service` whose `LimitExceeded` is answered as the protocol's 413 or 429. */
type Passed<F> = F extends (...args: infer A) => Effect.Effect<infer X, infer E, infer R> ?
  (...args: A) => Effect.Effect<X, Exclude<E, LimitExceeded> | PayloadTooLarge | TooManyRequests, R>
  : F

/** What the handlers call: the `Transport` in context, its limits refused as the server refuses its own. */
export type Served = { readonly [K in keyof Transport.Service]: Passed<Transport.Service[K]> }

/**
 * The protocol's refusal for a limit of the transport beneath the server (one that has limits: an `HttpTransport` to
 * another server). The engine has none, so a server on an engine never meets one.
 */
const refusal = (error: LimitExceeded): PayloadTooLarge | TooManyRequests => {
  switch (error.limit) {
    case "bodyBytes":
    case "messageLength":
      return new PayloadTooLarge({ limit: error.max })
    case "requestsInFlight":
      return new TooManyRequests({ what: "requests", limit: error.max, retryAfter: error.retryAfter ?? 1 })
    case "sessionsPerMinute":
      return new TooManyRequests({ what: "sessions", limit: error.max, retryAfter: error.retryAfter ?? 60 })
  }
}

const isLimit = (error: unknown): error is LimitExceeded => Predicate.isTagged(error, "LimitExceeded")

const passed = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, LimitExceeded> | PayloadTooLarge | TooManyRequests, R> =>
  Effect.mapError(
    effect,
    // Any other error passes unchanged: it is not a `LimitExceeded` (TypeScript does not narrow a type parameter).
    (error) => isLimit(error) ? refusal(error) : error as Exclude<E, LimitExceeded>
  )

export const make = (transport: Transport.Service): Served => ({
  createSession: (agent) => passed(transport.createSession(agent)),
  getSession: (sessionId) => passed(transport.getSession(sessionId)),
  getTurn: (sessionId, turnId) => passed(transport.getTurn(sessionId, turnId)),
  sendMessage: (sessionId, input, options) => passed(transport.sendMessage(sessionId, input, options)),
  events: transport.events,
  subscribe: transport.subscribe,
  snapshot: (sessionId, turnId) => passed(transport.snapshot(sessionId, turnId)),
  answer: (request) => passed(transport.answer(request)),
  grants: (sessionId) => passed(transport.grants(sessionId)),
  revokeGrant: (request) => passed(transport.revokeGrant(request)),
  cancel: (sessionId) => passed(transport.cancel(sessionId)),
  listOpen: (filter) => passed(transport.listOpen(filter))
})
