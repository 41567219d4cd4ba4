/**
 * The server's webhooks: the deliverer (a fiber beside the API) and the routes of the delivery log.
 *
 * The deliverer reads the store's outbox (`@parley/log`'s `Outbox`, written with the events in their transactions):
 * it routes each new entry to the endpoints of its tree's tenant that take its kind, claims the deliveries due (the
 * earliest undelivered one per endpoint and tree: order per tree), POSTs each, signed (`Webhook.sign`), with the event
 * id as the idempotency key, and records the attempt: a 2xx is delivered, anything else (a status, a refused
 * connection, no answer within `timeout`) is retried after 1 s, 2 s, 4 s, … up to 5 minutes between attempts, for as
 * long as it takes. It runs apart from the engine: a slow or dead receiver never holds a turn. A delivery claimed by a
 * process that dies is claimed again once its lease lapses: at least once.
 */
import type * as AnswerLink from "@parley/core/AnswerLink"
import type { Callback } from "@parley/core/Callback"
import type { SessionId } from "@parley/core/Ids"
import { TransportFailure } from "@parley/core/ParleyError"
import { ProtocolApi, Tenant } from "@parley/core/ProtocolApi"
import * as Webhook from "@parley/core/Webhook"
import * as Outbox from "@parley/log/Outbox"
import type { StoreError } from "@parley/log/StoreError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { WebhookEndpoint, Webhooks } from "../ParleyServer.js"
import type * as Sessions from "./sessions.js"

export type Endpoint = WebhookEndpoint
export type Options = Webhooks

const millis = (input: Duration.Input | undefined, fallback: number) =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

const reveal = (secret: Redacted.Redacted<string> | string) =>
  typeof secret === "string" ? secret : Redacted.value(secret)

/** The delay before the attempt after `attempts` failed ones: `backoff` doubled each time, at most `maxBackoff`. */
export const delayAfter = (attempts: number, backoff: number, maxBackoff: number): number =>
  Math.min(maxBackoff, backoff * 2 ** Math.max(0, Math.min(30, attempts - 1)))

interface Resolved {
  readonly id: string
  readonly tenant: string
  readonly url: string
  readonly secrets: ReadonlyArray<string>
  readonly events: ReadonlySet<Webhook.Kind>
}

const resolve = (endpoint: Endpoint): Resolved => ({
  id: endpoint.id ?? endpoint.url,
  tenant: endpoint.tenant,
  url: endpoint.url,
  secrets: (Array.isArray(endpoint.secret) ? endpoint.secret : [endpoint.secret]).map(reveal),
  events: new Set(endpoint.events ?? Outbox.kinds)
})

/** The delivery log's entry of a delivery. */
export const deliveryOf = (delivery: Outbox.Delivery): Webhook.Delivery => {
  const iso = (millis: number) => DateTime.formatIso(DateTime.makeUnsafe(millis))
  return new Webhook.Delivery({
    eventId: delivery.eventId,
    type: delivery.kind,
    treeId: delivery.treeId,
    seq: delivery.seq,
    endpoint: delivery.endpoint,
    attempts: delivery.attempts,
    createdAt: iso(delivery.createdAt),
    ...(delivery.lastStatus === undefined ? {} : { lastStatus: delivery.lastStatus }),
    ...(delivery.lastError === undefined ? {} : { lastError: delivery.lastError }),
    ...(delivery.nextAttemptAt === undefined ? {} : { nextAttemptAt: iso(delivery.nextAttemptAt) }),
    ...(delivery.deliveredAt === undefined ? {} : { deliveredAt: iso(delivery.deliveredAt) })
  })
}

/** The body of a claimed delivery (with the answer links of a callback it opens, when the server makes them). */
export const payloadOf = (claimed: Outbox.Claimed, links?: ReadonlyArray<AnswerLink.Link> | undefined): string => {
  const { event } = claimed
  return Webhook.encodePayload(
    new Webhook.Payload({
      id: claimed.eventId,
      type: claimed.kind,
      treeId: claimed.treeId,
      sessionId: event.sessionId,
      turnId: event.turnId,
      seq: claimed.seq,
      event,
      ...(links === undefined ? {} : { links })
    })
  )
}

/**
 * How the deliverer makes a callback's answer links: the same on every redelivery (their ids come from the
 * callback), made once.
 */
export interface LinkMaker {
  readonly make: (
    tenant: string,
    callback: Callback,
    root: SessionId
  ) => Effect.Effect<ReadonlyArray<AnswerLink.Link>, TransportFailure>
}

/**
 * Starts the deliverer in the scope: it runs until the scope closes (the requests in flight are cut then; their
 * deliveries are claimed again later).
 */
export const start = (
  outbox: Outbox.Service,
  tenants: Sessions.Service,
  options: Options,
  links?: LinkMaker | undefined
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const endpoints = options.endpoints.map(resolve)
    const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]))
    const timeout = millis(options.timeout, 10_000)
    const poll = millis(options.poll, 200)
    const backoff = millis(options.backoff, 1_000)
    const maxBackoff = millis(options.maxBackoff, 300_000)
    const concurrency = Math.max(1, options.concurrency ?? 32)
    // A claimed delivery is not due again before its request could have ended, and a margin.
    const lease = timeout + 5_000
    const client = yield* Effect.provide(Effect.service(HttpClient.HttpClient), FetchHttpClient.layer)
    const scope = yield* Effect.scope
    /** Requests that may start now. */
    let free = concurrency

    /** Gives each new entry its deliveries: the endpoints of its tree's tenant that take its kind. */
    const route: Effect.Effect<number, StoreError | TransportFailure> = Effect.gen(function*() {
      const entries = yield* outbox.unrouted(500)
      const tenantOf = new Map<SessionId, string | undefined>()
      for (const entry of entries) {
        if (!tenantOf.has(entry.treeId)) {
          tenantOf.set(entry.treeId, Option.getOrUndefined(yield* tenants.tenantOf(entry.treeId)))
        }
        const tenant = tenantOf.get(entry.treeId)
        const targets = endpoints
          .filter((endpoint) => endpoint.tenant === tenant && endpoint.events.has(entry.kind))
          .map((endpoint) => ({ tenant: endpoint.tenant, endpoint: endpoint.id }))
        yield* outbox.route(entry, targets, yield* Clock.currentTimeMillis)
      }
      return entries.length
    })

    const deliver = (claimed: Outbox.Claimed): Effect.Effect<void, StoreError> =>
      Effect.gen(function*() {
        const endpoint = byId.get(claimed.endpoint)
        if (endpoint === undefined) {
          // An endpoint no longer configured: kept in the log, tried again later (it may come back).
          return yield* outbox.record(claimed.eventId, claimed.endpoint, {
            _tag: "Failed",
            status: undefined,
            error: "the endpoint is not configured on this server",
            nextAttemptAt: (yield* Clock.currentTimeMillis) + maxBackoff
          })
        }
        // A callback's links; the delivery goes without them when they cannot be made (it is not held back).
        const opened = claimed.event._tag === "CallbackOpened" ? claimed.event.callback : undefined
        const answerLinks = links === undefined || opened === undefined
          ? undefined
          : yield* links.make(claimed.tenant, opened, claimed.treeId).pipe(
            Effect.catch((error) =>
              Effect.as(Effect.logWarning("a webhook's answer links could not be made", error), undefined)
            )
          )
        const body = payloadOf(claimed, answerLinks)
        const signature = yield* Webhook.sign({ secrets: endpoint.secrets, body })
        const request = HttpClientRequest.post(endpoint.url).pipe(
          HttpClientRequest.setHeaders({
            [Webhook.signatureHeader]: signature,
            [Webhook.eventIdHeader]: claimed.eventId,
            [Webhook.eventTypeHeader]: claimed.kind,
            "Idempotency-Key": claimed.eventId,
            "User-Agent": "parley-webhooks"
          }),
          HttpClientRequest.bodyText(body, "application/json")
        )
        const outcome = yield* client.execute(request).pipe(
          Effect.flatMap((response) =>
            // The body is read (and dropped) so the connection is free again.
            Effect.as(Effect.ignore(response.text), response.status)
          ),
          Effect.timeout(Duration.millis(timeout)),
          Effect.result
        )
        const now = yield* Clock.currentTimeMillis
        if (outcome._tag === "Success" && outcome.success >= 200 && outcome.success < 300) {
          return yield* outbox.record(claimed.eventId, claimed.endpoint, {
            _tag: "Delivered",
            status: outcome.success,
            at: now
          })
        }
        const nextAttemptAt = now + delayAfter(claimed.attempts + 1, backoff, maxBackoff)
        yield* outbox.record(
          claimed.eventId,
          claimed.endpoint,
          outcome._tag === "Success"
            ? { _tag: "Failed", status: outcome.success, error: `HTTP ${outcome.success}`, nextAttemptAt }
            : {
              _tag: "Failed",
              status: undefined,
              error: Cause.isTimeoutError(outcome.failure)
                ? `no answer within ${timeout} ms`
                : outcome.failure.message,
              nextAttemptAt
            }
        )
      })

    const step = Effect.gen(function*() {
      const routed = yield* route
      if (free === 0) return routed > 0
      const claimed = yield* outbox.claim(yield* Clock.currentTimeMillis, free, lease)
      for (const delivery of claimed) {
        free--
        yield* deliver(delivery).pipe(
          Effect.catchCause((cause) => Effect.logWarning("a webhook delivery could not be recorded", cause)),
          Effect.ensuring(Effect.sync(() => void free++)),
          Effect.forkIn(scope)
        )
      }
      return routed > 0 || claimed.length > 0
    })

    const loop = Effect.gen(function*() {
      while (true) {
        const busy = yield* step.pipe(
          Effect.catchCause((cause) =>
            Effect.as(Effect.logWarning("the webhook deliverer could not read the outbox", cause), false)
          )
        )
        if (!busy) yield* Effect.sleep(Duration.millis(poll))
      }
    })
    yield* Effect.forkScoped(loop)
  })

/** The routes of the delivery log: the tenant's own deliveries only. */
export const group = (outbox: Option.Option<Outbox.Service>) => {
  const unavailable = (error: StoreError) =>
    new TransportFailure({
      module: "ParleyServer",
      method: "webhooks",
      description: "the delivery log could not be read",
      cause: error
    })
  return HttpApiBuilder.group(ProtocolApi, "webhooks", (handlers) =>
    handlers
      .handle("deliveries", ({ query }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          if (Option.isNone(outbox)) return []
          const deliveries = yield* Effect.mapError(
            outbox.value.list(tenant.id, { eventId: query.eventId, limit: query.limit ?? 100 }),
            unavailable
          )
          return deliveries.map(deliveryOf)
        }))
      .handle("redeliver", ({ payload }) =>
        Effect.gen(function*() {
          const tenant = yield* Tenant
          const notFound = new Webhook.DeliveryNotFound({
            module: "ParleyServer",
            method: "redeliver",
            eventId: payload.eventId
          })
          if (Option.isNone(outbox)) return yield* notFound
          const reset = yield* Effect.mapError(
            outbox.value.redeliver(tenant.id, payload.eventId, yield* Clock.currentTimeMillis),
            unavailable
          )
          if (reset.length === 0) return yield* notFound
          return reset.map(deliveryOf)
        })))
}
