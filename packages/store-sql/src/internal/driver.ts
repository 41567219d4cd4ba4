/**
 * The event log's row-level driver on `@effect/sql` (`EventLog.Driver`): appends and new trees by group commit
 * (`writes.ts`), reads and what this process remembers to skip some of them (`reads.ts`), the open callbacks, and
 * appends by other processes (`follow`: SQLite polls a change counter at once when a watch of the file fires,
 * `sqliteChanges.ts`; PostgreSQL listens, `pgChanges.ts`).
 */
import type * as Callback from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type { Driver, Written } from "@parley/log/EventLog"
import type { StoreError } from "@parley/log/StoreError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { encodeEvent, encodeTree, type EventRow } from "./codec.js"
import type * as Database from "./database.js"
import { storeError } from "./errors.js"
import * as PgChanges from "./pgChanges.js"
import * as Reads from "./reads.js"
import * as SqliteChanges from "./sqliteChanges.js"
import * as Writes from "./writes.js"

/** The bytes the rows' events take in the database: their JSON text, in UTF-8 (what `parley_events.event` holds). */
const bytesOf = (rows: ReadonlyArray<EventRow>) => {
  let bytes = 0
  for (const row of rows) bytes += Buffer.byteLength(row.event, "utf8")
  return bytes
}

export const make = (
  database: Database.Database,
  options: Database.Options
): Effect.Effect<Driver, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const { dialect, pg, sql } = database
    const reads = Reads.make(database)
    const channel = dialect === "pg" ? yield* PgChanges.channelOf(database) : ""
    const { write } = yield* Writes.start(database, reads, channel)

    const follow: Driver["follow"] = (moved) => {
      /** An append by another process (or another store instance): what this process remembers of it is stale. */
      const foreignAppend = (treeId: SessionId, nextSeq: number) =>
        Effect.andThen(Effect.sync(() => reads.forget(treeId)), moved(treeId, nextSeq))
      if (dialect === "sqlite") {
        return SqliteChanges.follow(sql, {
          instance: database.instance,
          pollInterval: options.pollInterval === undefined
            ? undefined
            : Math.max(1, Math.round(Duration.toMillis(options.pollInterval))),
          watch: options.watch ?? true,
          onAppend: foreignAppend
        }).pipe(
          Effect.mapError(storeError("make", "could not read the change counter")),
          Effect.map((following) => {
            database.afterOwnWrite = following.afterOwnWrite
          })
        )
      }
      return Option.isSome(pg) ? PgChanges.follow(database, pg.value, channel, foreignAppend) : Effect.void
    }

    return {
      createTree: (tree) =>
        Effect.flatMap(
          Effect.fromResult(encodeTree(tree)),
          (row) => write<StoreError, void>((done) => ({ _tag: "CreateTree", tree, row, done }), undefined)
        ),
      getTree: reads.getTree,
      treeOf: reads.treeOf,
      nextSeq: (treeId) => reads.nextSeqOf("append", treeId),
      append: (append) =>
        Effect.flatMap(
          Effect.forEach(append.events, (event) => Effect.fromResult(encodeEvent("append", append.treeId, event))),
          (rows) =>
            write<Writes.AppendError, Written>((done) => ({ _tag: "Append", append, rows, done }), {
              bytes: bytesOf(rows)
            })
        ),
      read: (treeId, from) => reads.readEvents("read", treeId, from),
      readRecent: reads.readRecent,
      listOpen: (filter) => {
        const bySession = filter?.sessionId === undefined
          ? sql.literal("")
          : sql`AND c.session_id = ${filter.sessionId}`
        const byKind = filter?.kind === undefined ? sql.literal("") : sql`AND c.kind = ${filter.kind}`
        const resolution = sql`EXISTS (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id)`
        // The due ones (a cluster's wake-up pass, every few seconds) are read from the partial index
        // `parley_callbacks_due` (its terms: `resolved = 0 AND expires_at IS NOT NULL`), and each is checked against
        // the resolutions in the select list: a probe per due row, where an anti-join in the WHERE clause lets
        // PostgreSQL hash every resolution ever written. The check stays for callbacks a process of an older version
        // resolved without marking them.
        const [answered, open] = filter?.expiresBy === undefined
          ? [sql.literal("0"), sql`WHERE NOT ${resolution}`]
          : [resolution, sql`WHERE c.resolved = 0 AND c.expires_at IS NOT NULL AND c.expires_at <= ${filter.expiresBy}`]
        return sql<{
          readonly callback_id: string
          readonly tree_id: string
          readonly session_id: string
          readonly turn_id: string
          readonly kind: string
          readonly seq: number | string
          readonly answered: boolean | number | string
        }>`SELECT c.callback_id, c.tree_id, c.session_id, c.turn_id, c.kind, c.seq, ${answered} AS answered
          FROM parley_callbacks c ${open} ${bySession} ${byKind} ORDER BY c.tree_id, c.seq`.pipe(
          Effect.map((rows) =>
            rows.filter((row) => Number(row.answered) !== 1).map((row) => ({
              treeId: row.tree_id as SessionId,
              sessionId: row.session_id as SessionId,
              turnId: row.turn_id as TurnId,
              callbackId: row.callback_id as CallbackId,
              kind: row.kind as Callback.Kind,
              seq: Number(row.seq)
            }))
          ),
          Effect.mapError(storeError("listOpen", "could not list the open callbacks"))
        )
      },
      follow
    }
  })
