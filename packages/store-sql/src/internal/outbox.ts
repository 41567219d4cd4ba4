/**
 * The webhook outbox in the SQL store: the entries (`parley_outbox`, written by the appends in their transactions —
 * `writes.ts`) and their deliveries per endpoint (`parley_deliveries`). Routing an entry is one transaction (its
 * deliveries and its `routed` mark); a claim is one too (the due heads, each pushed `leaseMillis` on). The event a
 * delivery reports is read from the log (`parley_events`), never copied.
 */
import type { SessionId } from "@parley/core/Ids"
import * as Outbox from "@parley/log/Outbox"
import { StoreError } from "@parley/log/StoreError"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { decodeEvent } from "./codec.js"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"

interface DeliveryRow {
  readonly tree_id: string
  readonly seq: number | string
  readonly endpoint: string
  readonly tenant: string
  readonly kind: string
  readonly attempts: number | string
  readonly last_status: number | string | null
  readonly last_error: string | null
  readonly next_attempt_at: number | string | null
  readonly delivered_at: number | string | null
  readonly created_at: number | string
}

const optionalNumber = (value: number | string | null): number | undefined => value === null ? undefined : Number(value)

const deliveryOf = (row: DeliveryRow): Outbox.Delivery => {
  const treeId = row.tree_id as SessionId
  const seq = Number(row.seq)
  return {
    treeId,
    seq,
    kind: row.kind as Outbox.Kind,
    tenant: row.tenant,
    endpoint: row.endpoint,
    eventId: Outbox.eventId(treeId, seq),
    attempts: Number(row.attempts),
    lastStatus: optionalNumber(row.last_status),
    lastError: row.last_error ?? undefined,
    nextAttemptAt: optionalNumber(row.next_attempt_at),
    deliveredAt: optionalNumber(row.delivered_at),
    createdAt: Number(row.created_at)
  }
}

const columns = "d.tree_id, d.seq, d.endpoint, d.tenant, d.kind, d.attempts, d.last_status, d.last_error, " +
  "d.next_attempt_at, d.delivered_at, d.created_at"

export const make = ({ awaitingLock, sql, transaction }: Database): Outbox.Service => {
  const inTransaction = <A, E>(what: string, method: string, body: Effect.Effect<A, E>) =>
    transaction(() => body).pipe(
      Effect.mapError((error) => error instanceof StoreError ? error : storeError(method, `could not ${what}`)(error))
    )

  return {
    unrouted: (limit) =>
      sql<{ readonly tree_id: string; readonly seq: number | string; readonly kind: string }>`
        SELECT tree_id, seq, kind FROM parley_outbox WHERE routed = 0 ORDER BY tree_id, seq LIMIT ${limit}`.pipe(
        Effect.map((rows) =>
          rows.map((row) => ({ treeId: row.tree_id as SessionId, seq: Number(row.seq), kind: row.kind as Outbox.Kind }))
        ),
        Effect.mapError(storeError("unrouted", "could not read the outbox"))
      ),
    route: (entry, targets, now) =>
      inTransaction(
        `route event ${Outbox.eventId(entry.treeId, entry.seq)}`,
        "route",
        Effect.gen(function*() {
          const marked = yield* sql`UPDATE parley_outbox SET routed = 1
            WHERE tree_id = ${entry.treeId} AND seq = ${entry.seq} AND routed = 0 RETURNING seq`
          if (marked.length === 0) return
          for (const target of targets) {
            yield* sql`INSERT INTO parley_deliveries
              (tree_id, seq, endpoint, tenant, kind, attempts, next_attempt_at, created_at)
              VALUES (${entry.treeId}, ${entry.seq}, ${target.endpoint}, ${target.tenant}, ${entry.kind}, 0, ${now},
                ${now})
              ON CONFLICT (tree_id, seq, endpoint) DO NOTHING`
          }
        })
      ),
    // Read first, outside any transaction: an idle deliverer's poll writes nothing (no lock, no sync). The due ones
    // are then pushed on in one unsynced transaction (a claim lost in a crash is only a delivery made again), each only
    // if no other deliverer claimed it meanwhile.
    claim: (now, limit, leaseMillis) =>
      Effect.gen(function*() {
        const rows = yield* sql<DeliveryRow & { readonly version: number | string; readonly event: string }>`
          SELECT ${sql.literal(columns)}, e.version, e.event
          FROM parley_deliveries d JOIN parley_events e ON e.tree_id = d.tree_id AND e.seq = d.seq
          WHERE d.delivered_at IS NULL AND d.next_attempt_at <= ${now}
          AND NOT EXISTS (SELECT 1 FROM parley_deliveries p WHERE p.endpoint = d.endpoint
            AND p.tree_id = d.tree_id AND p.delivered_at IS NULL AND p.seq < d.seq)
          ORDER BY d.next_attempt_at, d.tree_id, d.seq LIMIT ${limit}`.pipe(
          Effect.mapError(storeError("claim", "could not read the due deliveries"))
        )
        if (rows.length === 0) return []
        const until = now + leaseMillis
        return yield* transaction(() =>
          Effect.gen(function*() {
            const claimed: Array<Outbox.Claimed> = []
            for (const row of rows) {
              const event = decodeEvent("claim", row.tree_id as SessionId, row)
              if (Result.isFailure(event)) return yield* Effect.fail(event.failure)
              const taken = yield* sql`UPDATE parley_deliveries SET next_attempt_at = ${until}
                WHERE tree_id = ${row.tree_id} AND seq = ${row.seq} AND endpoint = ${row.endpoint}
                AND delivered_at IS NULL AND next_attempt_at = ${row.next_attempt_at} RETURNING seq`
              if (taken.length > 0) claimed.push({ ...deliveryOf(row), nextAttemptAt: until, event: event.success })
            }
            return claimed
          }), { synced: false }).pipe(
            Effect.mapError((error) =>
              error instanceof StoreError ? error : storeError("claim", "could not claim deliveries")(error)
            )
          )
      }),
    record: (eventId, endpoint, attempt) => {
      const key = Outbox.parseEventId(eventId)
      if (key === undefined) return Effect.void
      const statement = attempt._tag === "Delivered"
        ? sql`UPDATE parley_deliveries SET attempts = attempts + 1, last_status = ${attempt.status},
            last_error = NULL, next_attempt_at = NULL, delivered_at = ${attempt.at}
            WHERE tree_id = ${key.treeId} AND seq = ${key.seq} AND endpoint = ${endpoint}`
        : sql`UPDATE parley_deliveries SET attempts = attempts + 1, last_status = ${attempt.status ?? null},
            last_error = ${attempt.error}, next_attempt_at = ${attempt.nextAttemptAt}
            WHERE tree_id = ${key.treeId} AND seq = ${key.seq} AND endpoint = ${endpoint}`
      return awaitingLock("recording a delivery", statement).pipe(
        Effect.asVoid,
        Effect.mapError(storeError("record", `could not record a delivery of ${eventId}`))
      )
    },
    list: (tenant, options) => {
      const limit = Math.max(0, options?.limit ?? 100)
      const key = options?.eventId === undefined ? undefined : Outbox.parseEventId(options.eventId)
      if (options?.eventId !== undefined && key === undefined) return Effect.succeed([])
      const rows = key === undefined
        ? sql<DeliveryRow>`SELECT ${sql.literal(columns)} FROM parley_deliveries d WHERE d.tenant = ${tenant}
            ORDER BY d.created_at DESC, d.tree_id DESC, d.seq DESC LIMIT ${limit}`
        : sql<DeliveryRow>`SELECT ${sql.literal(columns)} FROM parley_deliveries d WHERE d.tenant = ${tenant}
            AND d.tree_id = ${key.treeId} AND d.seq = ${key.seq} ORDER BY d.endpoint LIMIT ${limit}`
      return rows.pipe(
        Effect.map((rows) => rows.map(deliveryOf)),
        Effect.mapError(storeError("list", `could not read the deliveries of ${tenant}`))
      )
    },
    redeliver: (tenant, eventId, now) => {
      const key = Outbox.parseEventId(eventId)
      if (key === undefined) return Effect.succeed([])
      return awaitingLock(
        "redelivering an event",
        sql<DeliveryRow>`UPDATE parley_deliveries SET delivered_at = NULL, next_attempt_at = ${now}
          WHERE tenant = ${tenant} AND tree_id = ${key.treeId} AND seq = ${key.seq}
          RETURNING tree_id, seq, endpoint, tenant, kind, attempts, last_status, last_error, next_attempt_at,
            delivered_at, created_at`
      ).pipe(
        Effect.map((rows) => rows.map(deliveryOf)),
        Effect.mapError(storeError("redeliver", `could not redeliver ${eventId}`))
      )
    }
  }
}
