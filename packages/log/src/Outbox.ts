/**
 * The webhook outbox: what a tree's log has to report to the outside (`callback.opened`, `callback.resolved`,
 * `turn.ended`), written by the event log's `append` in the SAME write as the events it reports — a crash between
 * the two cannot lose a delivery nor invent one — and the deliveries a server made of it, one per endpoint.
 *
 * - An **entry** is one reportable event (`kindOf`): its tree, `seq` and kind; its id (`eventId`) is the idempotency
 *   key a receiver sees. The store writes it; nobody else does.
 * - `unrouted` lists the entries no deliverer has looked at yet, in order per tree; `route` gives one the deliveries
 *   it calls for (the endpoints of the tree's tenant that take its kind; none is fine), all or none, once.
 * - `claim` takes the deliveries due (their next attempt has come), at most one per endpoint and tree — the earliest
 *   undelivered one — so a tree's deliveries reach an endpoint in order: entry n + 1 is not handed out before n was
 *   delivered. A claimed delivery is not due again for `lease` (another deliverer, or this one after a crash, takes it
 *   up then): deliveries are at least once.
 * - `delivered` / `failed` record an attempt (its HTTP status, its error, the next attempt); `list` is a tenant's
 *   delivery log, newest first; `redeliver` makes a past event's deliveries due again.
 *
 * @example
 * ```ts
 * import { Outbox, SessionStore } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const log = Effect.gen(function*() {
 *   const outbox = yield* Outbox.Outbox
 *   return yield* outbox.list("acme", { limit: 20 })
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StoreError } from "./StoreError.js"

/**
 * The kinds of event a webhook reports.
 *
 * @since 0.1.0
 * @category Models
 */
export type Kind = "callback.opened" | "callback.resolved" | "turn.ended"

/**
 * Every kind, in the order of a turn.
 *
 * @since 0.1.0
 * @category Models
 */
export const kinds: ReadonlyArray<Kind> = ["callback.opened", "callback.resolved", "turn.ended"]

/**
 * The kind a webhook reports an event as, if it reports it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const kindOf = (event: TurnEvent): Kind | undefined => {
  switch (event._tag) {
    case "CallbackOpened":
      return "callback.opened"
    case "CallbackResolved":
      return "callback.resolved"
    case "TurnEnded":
      return "turn.ended"
    default:
      return undefined
  }
}

/**
 * The id of the event `seq` of a tree, as webhooks carry it (`<treeId>.<seq>`): stable across redeliveries, the
 * receiver's idempotency key.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const eventId = (treeId: SessionId, seq: number): string => `${treeId}.${seq}`

/**
 * The tree and `seq` an event id names, if it is one.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const parseEventId = (
  id: string
): { readonly treeId: SessionId; readonly seq: number } | undefined => {
  const dot = id.lastIndexOf(".")
  if (dot <= 0) return undefined
  const seq = Number(id.slice(dot + 1))
  if (!Number.isSafeInteger(seq) || seq < 0 || String(seq) !== id.slice(dot + 1)) return undefined
  return { treeId: id.slice(0, dot) as SessionId, seq }
}

/**
 * An outbox entry: one reportable event of a tree.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Entry {
  readonly treeId: SessionId
  readonly seq: number
  readonly kind: Kind
}

/**
 * Where an entry is delivered: an endpoint (its id, stable across restarts: the server's configuration names it) of
 * a tenant.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Target {
  readonly tenant: string
  readonly endpoint: string
}

/**
 * One delivery of an entry to an endpoint, as the delivery log shows it. Times are epoch millis.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Delivery extends Entry, Target {
  readonly eventId: string
  /** Attempts made so far. */
  readonly attempts: number
  /** The HTTP status of the last attempt (none before the first, or when it got no response). */
  readonly lastStatus: number | undefined
  /** Why the last attempt failed, when it did. */
  readonly lastError: string | undefined
  /** When the next attempt is due (`undefined` once delivered). */
  readonly nextAttemptAt: number | undefined
  /** When it was delivered (a 2xx), if it was. */
  readonly deliveredAt: number | undefined
  /** When the delivery was made (its entry routed). */
  readonly createdAt: number
}

/**
 * A delivery claimed by a deliverer, with the event it reports.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Claimed extends Delivery {
  readonly event: TurnEvent
}

/**
 * The attempt a deliverer made: delivered (`status`, a 2xx) or failed, due again at `nextAttemptAt`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Attempt =
  | { readonly _tag: "Delivered"; readonly status: number; readonly at: number }
  | {
    readonly _tag: "Failed"
    readonly status: number | undefined
    readonly error: string
    readonly nextAttemptAt: number
  }

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Entries not routed yet, oldest first per tree (a tree's entries in `seq` order), at most `limit`. */
  readonly unrouted: (limit: number) => Effect.Effect<ReadonlyArray<Entry>, StoreError>
  /**
   * Gives an entry its deliveries, due at `now`, and marks it routed, all or none. An entry routed before is left as
   * it is (a second deliverer that raced the first adds nothing).
   */
  readonly route: (
    entry: Entry,
    targets: ReadonlyArray<Target>,
    now: number
  ) => Effect.Effect<void, StoreError>
  /**
   * The deliveries due at `now` — for each endpoint and tree only the earliest undelivered one, and only when it is
   * due — at most `limit`; each is not due again before `now + leaseMillis`.
   */
  readonly claim: (
    now: number,
    limit: number,
    leaseMillis: number
  ) => Effect.Effect<ReadonlyArray<Claimed>, StoreError>
  /** Records an attempt at the delivery of `eventId` to `endpoint`. */
  readonly record: (eventId: string, endpoint: string, attempt: Attempt) => Effect.Effect<void, StoreError>
  /** A tenant's delivery log, newest first: every delivery, or those of one event. */
  readonly list: (
    tenant: string,
    options?: { readonly eventId?: string | undefined; readonly limit?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<Delivery>, StoreError>
  /**
   * Makes the deliveries of a past event to a tenant's endpoints due again at `now` (delivered or not): the ones it
   * reset, none when the tenant has no delivery of that event.
   */
  readonly redeliver: (
    tenant: string,
    eventId: string,
    now: number
  ) => Effect.Effect<ReadonlyArray<Delivery>, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Outbox extends Context.Service<Outbox, Service>()("@parley/log/Outbox") {}
