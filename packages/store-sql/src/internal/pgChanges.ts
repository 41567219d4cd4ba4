/**
 * Appends by other processes on PostgreSQL: LISTEN tells of them at once; each notification carries its change's
 * number. The listening connection is checked every `pollInterval` (our own ping must come back within a second, else
 * LISTEN starts again on a new connection), and then the changes numbered past the last one seen are read: none
 * normally, the ones a lost connection missed otherwise. (SQLite polls instead: `sqliteChanges.ts`.)
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { SessionId } from "@parley/core/Ids"
import { StoreError } from "@parley/log/StoreError"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import type { SqlError } from "effect/sql/SqlError"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"
import { sleepLive } from "./sqliteChanges.js"

/** The channel of the store's schema (one per schema, so stores on other schemas of the database are not woken). */
export const channelOf = ({ sql }: Database): Effect.Effect<string, StoreError> =>
  sql<{ readonly schema: string }>`SELECT current_schema() AS schema`.pipe(
    Effect.mapError(storeError("make", "could not read the current schema")),
    Effect.map((rows) => `parley_changes_${rows[0]?.schema ?? "public"}`.slice(0, 63))
  )

/** Listens in the scope; `onAppend` runs for each append by another store instance. Fails when LISTEN won't start. */
export const follow = (
  database: Database,
  client: PgClient.PgClient,
  channel: string,
  onAppend: (treeId: SessionId, nextSeq: number) => Effect.Effect<void>
): Effect.Effect<void, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const { instance, options, sql } = database
    const interval = Math.max(10, Math.round(Duration.toMillis(options.pollInterval ?? "2 seconds")))
    let cursor = yield* sql<{ readonly id: number | string | null }>`SELECT MAX(change_id) AS id FROM parley_trees`
      .pipe(
        Effect.mapError(storeError("make", "could not read the change counter")),
        Effect.map((rows) => Number(rows[0]?.id ?? 0))
      )
    const catchUp: Effect.Effect<void, SqlError> = Effect.gen(function*() {
      while (true) {
        const rows = yield* sql<{
          readonly tree_id: string
          readonly next_seq: number | string
          readonly change_id: number | string
          readonly changed_by: string | null
        }>`SELECT tree_id, next_seq, change_id, changed_by FROM parley_trees
            WHERE change_id > ${cursor} ORDER BY change_id LIMIT 1000`
        for (const row of rows) {
          cursor = Math.max(cursor, Number(row.change_id))
          if (row.changed_by !== instance) yield* onAppend(row.tree_id as SessionId, Number(row.next_seq))
        }
        if (rows.length < 1000) return
      }
    })
    let pings = 0
    const pinged = new Map<string, Deferred.Deferred<void>>()
    /** Listens until the connection stops answering our pings. */
    const listenOnce = (started: Deferred.Deferred<void>) =>
      Effect.scoped(Effect.gen(function*() {
        // LISTEN holds a connection of its own, outside the pool (`PgClient.listen` would reserve one of the pool's
        // and leave a pool of one no connection for the ping). It is confirmed once the queue is there; its
        // notifications are read by a fiber of this scope.
        const listener = yield* PgClient.makeClient(client.config).pipe(Effect.provide(Reactivity.layer))
        const notifications = yield* listener.listen(channel)
        yield* Queue.take(notifications).pipe(
          Effect.flatMap(({ payload }) => {
            const [from, treeId, nextSeq, changeId] = payload.split(" ")
            if (treeId === "ping") {
              const heard = from === instance ? pinged.get(payload) : undefined
              return heard === undefined ? Effect.void : Effect.ignore(Deferred.succeed(heard, undefined))
            }
            if (changeId !== undefined) cursor = Math.max(cursor, Number(changeId))
            if (from === instance || nextSeq === undefined) return Effect.void
            return onAppend(treeId as SessionId, Number(nextSeq))
          }),
          Effect.forever,
          Effect.forkScoped
        )
        /** Sends a ping until it comes back (true), every `every` ms, `times` times at most. */
        const ping = (every: number, times: number) =>
          Effect.gen(function*() {
            const payload = `${instance} ping ${++pings}`
            const heard = yield* Deferred.make<void>()
            pinged.set(payload, heard)
            for (let i = 0; i < times; i++) {
              yield* sql`SELECT pg_notify(${channel}, ${payload})`
              const back = yield* Effect.raceFirst(
                Effect.as(Deferred.await(heard), true),
                Effect.as(sleepLive(every), false)
              )
              if (back) return true
            }
            return false
          }).pipe(Effect.ensuring(Effect.sync(() => pinged.clear())))
        // The notifications flow once a first ping comes back (it may take a few tries).
        if (!(yield* ping(20, 250))) return
        while (true) {
          const answered = yield* ping(1000, 1)
          if (!answered) return
          yield* Effect.ignore(Deferred.succeed(started, undefined))
          yield* catchUp
          yield* sleepLive(interval)
        }
      }))
    const started = yield* Deferred.make<void>()
    yield* Effect.gen(function*() {
      while (true) {
        yield* listenOnce(started).pipe(
          Effect.catchCause((cause) => Effect.logWarning("SqlStore: LISTEN failed", cause))
        )
        yield* Effect.logWarning(`SqlStore: LISTEN ${channel} stopped answering; listening again`)
        yield* sleepLive(100)
      }
    }).pipe(Effect.forkScoped)
    // LISTEN is in place once our first ping comes back.
    const listening = yield* Effect.raceFirst(
      Effect.as(Deferred.await(started), true),
      Effect.as(sleepLive(5000), false)
    )
    if (!listening) {
      return yield* new StoreError({ method: "make", description: `LISTEN ${channel} did not start within 5 s` })
    }
  })
