/**
 * Webhooks of a Parley server: what a receiver gets, and how it checks that the server sent it.
 *
 * A server configured with webhook endpoints (`ParleyServer`'s `webhooks`) POSTs every `callback.opened`,
 * `callback.resolved` and `turn.ended` of a tenant's sessions to the tenant's endpoints, from a durable outbox written
 * in the same transaction as the event: at least once (a receiver may get an event twice, never zero times), in order
 * per tree and endpoint, retried on a backoff (1 s doubling up to 5 minutes) until the receiver answers 2xx.
 *
 * **The request.** `POST <url>` with `Content-Type: application/json` and
 * - `Parley-Event-Id: <treeId>.<seq>` — the event's id, also sent as `Idempotency-Key`: the same on every
 *   redelivery, the key a receiver deduplicates by;
 * - `Parley-Event-Type: callback.opened | callback.resolved | turn.ended`;
 * - `Parley-Signature: t=<unix seconds>,v1=<hex>` — `v1` is HMAC-SHA256, keyed with the endpoint's secret, of the
 *   UTF-8 text `${t}.${body}` (the timestamp, a dot, then the raw body exactly as received), in lowercase hex. During
 *   a secret's rotation the server signs with each of the endpoint's secrets: one `v1=` per secret.
 *
 * The body is a `Payload`: `{ id, type, treeId, sessionId, turnId, seq, event, links? }`, `event` the encoded
 * `TurnEvent` (a `CallbackOpened` carries the callback with its request); `links`, on the `callback.opened` of an
 * approval when the server has a links secret, the answer links (`AnswerLink`) a person can follow without a key.
 *
 * **Checking it.** `verify` (an `Effect`) and `isValid` (a `Promise<boolean>`, for a receiver without Effect) accept
 * a request when one of its `v1` signatures is that of one of the given secrets (pass the old and the new one while
 * rotating) and its timestamp is within `tolerance` (default 300 seconds) of now: a replayed old request is refused.
 * They compare in constant time and need only Web Crypto (`globalThis.crypto.subtle`: Node, Deno, Bun, browsers).
 * Verify the raw body before parsing it.
 *
 * @example
 * ```ts
 * import { Webhook } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const receive = (headers: Record<string, string | undefined>, body: string) =>
 *   Effect.gen(function*() {
 *     yield* Webhook.verify({ secrets: ["whsec_dev"], header: headers["parley-signature"], body })
 *     const payload = yield* Webhook.decodePayload(body)
 *     if (payload.event._tag === "CallbackOpened") console.log("asks:", payload.event.callback.id)
 *   })
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Link } from "./AnswerLink.js"
import { SessionId, TurnId } from "./Ids.js"
import { TypeId } from "./ParleyError.js"
import { TurnEvent } from "./TurnEvent.js"

/**
 * The header that carries the signatures.
 *
 * @since 0.1.0
 * @category Models
 */
export const signatureHeader = "Parley-Signature"

/**
 * The header that carries the event's id (also sent as `Idempotency-Key`).
 *
 * @since 0.1.0
 * @category Models
 */
export const eventIdHeader = "Parley-Event-Id"

/**
 * The header that carries the event's kind.
 *
 * @since 0.1.0
 * @category Models
 */
export const eventTypeHeader = "Parley-Event-Type"

/**
 * How far a signature's timestamp may be from now, in seconds, by default (5 minutes).
 *
 * @since 0.1.0
 * @category Models
 */
export const defaultTolerance = 300

/**
 * The kinds of event a webhook reports.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Kind = Schema.Literals(["callback.opened", "callback.resolved", "turn.ended"])

/**
 * @since 0.1.0
 * @category Schemas
 */
export type Kind = typeof Kind.Type

/**
 * The body of a webhook request.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Payload extends Schema.Class<Payload>("@parley/core/Webhook/Payload")({
  /** The event's id, `<treeId>.<seq>`: the idempotency key. */
  id: Schema.String,
  type: Kind,
  treeId: SessionId,
  sessionId: SessionId,
  turnId: TurnId,
  seq: Schema.Number,
  event: TurnEvent,
  /** On `callback.opened` of an approval, when the server makes answer links: one per answer. */
  links: Schema.optionalKey(Schema.Array(Link))
}) {}

const PayloadJson = Schema.fromJsonString(Payload)
const decodeJson = Schema.decodeUnknownEffect(PayloadJson)

/**
 * A webhook's body, as JSON text (what the server sends).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const encodePayload: (payload: Payload) => string = Schema.encodeSync(PayloadJson)

/**
 * Decodes a webhook's body (after `verify`): a body that is no `Payload` is `SignatureInvalid` (`malformed`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decodePayload = (body: string): Effect.Effect<Payload, SignatureInvalid> =>
  Effect.mapError(
    decodeJson(body),
    (error) =>
      new SignatureInvalid({ module: "Webhook", method: "decode", reason: "malformed", description: error.message })
  )

/**
 * A webhook request that does not check out: no or a malformed `Parley-Signature` (`malformed`), a timestamp outside
 * the tolerance (`expired`), or no signature of any of the secrets (`mismatch`).
 *
 * @since 0.1.0
 * @category Errors
 */
export class SignatureInvalid extends Schema.TaggedError<SignatureInvalid>("@parley/core/Webhook/SignatureInvalid")(
  "SignatureInvalid",
  {
    module: Schema.String,
    method: Schema.String,
    reason: Schema.Literals(["malformed", "expired", "mismatch"]),
    description: Schema.optional(Schema.String)
  }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.module}.${this.method}: the webhook's signature is invalid (${this.reason})${
      this.description === undefined ? "" : `: ${this.description}`
    }`
  }
}

/**
 * A delivery of one event to one endpoint, as the delivery log (`GET /webhooks/deliveries`) shows it. Times are ISO
 * strings; `nextAttemptAt` is absent once it was delivered.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Delivery extends Schema.Class<Delivery>("@parley/core/Webhook/Delivery")({
  eventId: Schema.String,
  type: Kind,
  treeId: SessionId,
  seq: Schema.Number,
  endpoint: Schema.String,
  attempts: Schema.Number,
  lastStatus: Schema.optionalKey(Schema.Number),
  lastError: Schema.optionalKey(Schema.String),
  nextAttemptAt: Schema.optionalKey(Schema.String),
  deliveredAt: Schema.optionalKey(Schema.String),
  createdAt: Schema.String
}) {}

/**
 * No delivery of this event to the tenant's endpoints (an unknown id, another tenant's event, or one no endpoint
 * took): `POST /webhooks/deliveries/redeliver` answers 404.
 *
 * @since 0.1.0
 * @category Errors
 */
export class DeliveryNotFound extends Schema.TaggedError<DeliveryNotFound>("@parley/core/Webhook/DeliveryNotFound")(
  "DeliveryNotFound",
  {
    module: Schema.String,
    method: Schema.String,
    eventId: Schema.String,
    description: Schema.optional(Schema.String)
  }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.module}.${this.method}: no delivery of event ${this.eventId}`
  }
}

// -----------------------------------------------------------------------------
// Signatures
// -----------------------------------------------------------------------------

const utf8 = new TextEncoder()

const hmac = async (secret: string, text: string): Promise<string> => {
  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    utf8.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"]
  )
  const signature = new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", key, utf8.encode(text)))
  return Array.from(signature, (byte) => byte.toString(16).padStart(2, "0")).join("")
}

/** Equal strings, in time that depends on their length only. */
const constantTimeEqual = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/**
 * The `Parley-Signature` header of `body`, signed at `timestamp` (unix seconds) with each of `secrets`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const signatureOf = async (options: {
  readonly secrets: string | ReadonlyArray<string>
  readonly body: string
  readonly timestamp: number
}): Promise<string> => {
  const secrets = typeof options.secrets === "string" ? [options.secrets] : options.secrets
  const t = Math.floor(options.timestamp)
  const signatures = await Promise.all(secrets.map((secret) => hmac(secret, `${t}.${options.body}`)))
  return [`t=${t}`, ...signatures.map((v1) => `v1=${v1}`)].join(",")
}

/**
 * Signs `body` now (the `Clock`'s time): the `Parley-Signature` header's value.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const sign = (options: {
  readonly secrets: string | ReadonlyArray<string>
  readonly body: string
}): Effect.Effect<string> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) => Effect.promise(() => signatureOf({ ...options, timestamp: Math.floor(now / 1000) }))
  )

/**
 * What `verify` and `isValid` check.
 *
 * @since 0.1.0
 * @category Models
 */
export interface VerifyOptions {
  /** The endpoint's secrets: a request signed with any of them is accepted (the old and the new while rotating). */
  readonly secrets: string | ReadonlyArray<string>
  /** The `Parley-Signature` header as received. */
  readonly header: string | null | undefined
  /** The raw body, exactly as received. */
  readonly body: string
  /** How far the timestamp may be from now, in seconds (default 300). */
  readonly tolerance?: number | undefined
  /** Now, in unix seconds (default: the clock's). */
  readonly now?: number | undefined
}

type Checked = { readonly ok: true } | {
  readonly ok: false
  readonly reason: SignatureInvalid["reason"]
  readonly description: string
}

const check = async (options: VerifyOptions, nowSeconds: number): Promise<Checked> => {
  if (options.header === undefined || options.header === null || options.header === "") {
    return { ok: false, reason: "malformed", description: `no ${signatureHeader} header` }
  }
  let timestamp: number | undefined
  const given: Array<string> = []
  for (const part of options.header.split(",")) {
    const eq = part.indexOf("=")
    const name = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (name === "t" && /^\d+$/.test(value)) timestamp = Number(value)
    else if (name === "v1" && value !== "") given.push(value.toLowerCase())
  }
  if (timestamp === undefined || given.length === 0) {
    return { ok: false, reason: "malformed", description: `${signatureHeader} needs t= and v1=` }
  }
  const tolerance = options.tolerance ?? defaultTolerance
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    return {
      ok: false,
      reason: "expired",
      description: `signed ${nowSeconds - timestamp} s ago (tolerance ${tolerance} s)`
    }
  }
  const secrets = typeof options.secrets === "string" ? [options.secrets] : options.secrets
  for (const secret of secrets) {
    const expected = await hmac(secret, `${timestamp}.${options.body}`)
    // Every given signature is compared, whichever matches: the time says nothing of which one did.
    let matched = false
    for (const v1 of given) matched = constantTimeEqual(v1, expected) || matched
    if (matched) return { ok: true }
  }
  return { ok: false, reason: "mismatch", description: "no signature of the endpoint's secrets" }
}

/**
 * Checks a webhook request's signature: fails with `SignatureInvalid` unless one of its signatures is one of the
 * `secrets`' over its timestamp and body, signed within the tolerance of now.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const verify = (options: VerifyOptions): Effect.Effect<void, SignatureInvalid> =>
  Effect.gen(function*() {
    const now = options.now ?? Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const checked = yield* Effect.promise(() => check(options, now))
    if (!checked.ok) {
      return yield* new SignatureInvalid({
        module: "Webhook",
        method: "verify",
        reason: checked.reason,
        description: checked.description
      })
    }
  })

/**
 * `verify` for a receiver without Effect: whether the request checks out (now is `Date.now()` unless given).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const isValid = async (options: VerifyOptions): Promise<boolean> =>
  (await check(options, options.now ?? Math.floor(Date.now() / 1000))).ok
