/**
 * The `SessionStore` port on `@effect/sql` (SQLite and PostgreSQL), put together from its parts:
 * - `database.ts`: the dialect, write transactions (and the wait for another process's lock), migrations;
 * - `writes.ts`: appends and new trees by group commit;
 * - `reads.ts`: reads, and what this process remembers to skip some of them;
 * - `leases.ts`: owners, claims, recovery's lists;
 * - `sqliteChanges.ts` / `pgChanges.ts`: appends by other processes (SQLite polls, PostgreSQL listens);
 * - here: the in-process fan-out (`Fanout`) and `changes`, snapshots, secrets, open callbacks, the service.
 *
 * After a commit, this process's tails get the appended events at once and `changes` the new length. Appends by
 * other processes are noticed by a poll of `parley_trees.change_id` on SQLite, run at once when a watch of the file
 * fires, and by LISTEN/NOTIFY on PostgreSQL; tails then read what they miss from the table.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as Callback from "@parley/core/Callback"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import * as Fanout from "@parley/log/Fanout"
import type { Service, Snapshot } from "@parley/log/SessionStore"
import { SeqConflict, StoreError } from "@parley/log/StoreError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { encodeEvent, encodeTree } from "./codec.js"
import * as Database from "./database.js"
import { storeError } from "./errors.js"
import * as Leases from "./leases.js"
import * as PgChanges from "./pgChanges.js"
import * as Reads from "./reads.js"
import * as SqliteChanges from "./sqliteChanges.js"
import * as Writes from "./writes.js"

export type Options = Database.Options

export const syncedCommits = Writes.syncedCommits

export const make = (
  options: Options = {}
): Effect.Effect<Service, StoreError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const database = yield* Database.open(options)
    const { awaitingLock, dialect, pg, sql } = database
    const reads = Reads.make(database)

    // In-process fan-out: the subscribers of trees' events (`Fanout`, shared with every store), one PubSub for
    // `changes`.
    const changes = yield* PubSub.unbounded<{ readonly treeId: SessionId; readonly nextSeq: number }>()
    const fanout = Fanout.make({
      read: reads.readRecent,
      exists: (treeId) => Effect.map(reads.nextSeqOf("tail", treeId), Option.isSome)
    })

    /**
     * An append by another process (or another store instance) was noticed. `changes` first, then the tails: an
     * engine hears of it before a reader of the tree's events can come asking the engine about what it read.
     */
    const foreignAppend = (treeId: SessionId, nextSeq: number) =>
      Effect.zipRight(
        Effect.sync(() => reads.forget(treeId)),
        Effect.zipRight(
          PubSub.publish(changes, { treeId, nextSeq }),
          Effect.sync(() => fanout.moved(treeId, nextSeq))
        )
      )

    const channel = dialect === "pg" ? yield* PgChanges.channelOf(database) : ""
    const { write } = yield* Writes.start(database, reads, channel, (appended) =>
      Effect.zipRight(
        Effect.sync(() => fanout.appended(appended.treeId, appended.events)),
        PubSub.publish(changes, {
          treeId: appended.treeId,
          nextSeq: appended.expectedSeq + appended.events.length
        })
      ))

    // Appends by others: SQLite polls, PostgreSQL listens.
    if (dialect === "sqlite") {
      const following = yield* SqliteChanges.follow(sql, {
        instance: database.instance,
        pollInterval: options.pollInterval === undefined
          ? undefined
          : Math.max(1, Math.round(Duration.toMillis(options.pollInterval))),
        watch: options.watch ?? true,
        onAppend: foreignAppend
      }).pipe(Effect.mapError(storeError("make", "could not read the change counter")))
      database.afterOwnWrite = following.afterOwnWrite
    } else if (Option.isSome(pg)) {
      yield* PgChanges.follow(database, pg.value, channel, foreignAppend)
    }

    // -------------------------------------------------------------------------
    // Snapshots of the projection: the latest per tree, written outside the appends' transactions
    // -------------------------------------------------------------------------

    // One statement: kept only for a tree the store has, and only over a snapshot that is not further on.
    const saveSnapshot = (treeId: SessionId, snapshot: Snapshot) =>
      awaitingLock(
        "saving a snapshot",
        sql`INSERT INTO parley_snapshots (tree_id, seq, version, state)
        SELECT ${treeId}, CAST(${snapshot.seq} AS INTEGER), CAST(${snapshot.version} AS INTEGER), ${snapshot.state}
        WHERE EXISTS (SELECT 1 FROM parley_trees WHERE tree_id = ${treeId})
        ON CONFLICT (tree_id) DO UPDATE SET seq = excluded.seq, version = excluded.version, state = excluded.state
        WHERE parley_snapshots.seq <= excluded.seq`
      ).pipe(
        Effect.asVoid,
        Effect.mapError(storeError("saveSnapshot", `could not save a snapshot of tree ${treeId}`))
      )

    const loadSnapshot = (treeId: SessionId) =>
      sql<{ readonly seq: number | string; readonly version: number | string; readonly state: string }>`
        SELECT seq, version, state FROM parley_snapshots WHERE tree_id = ${treeId}`.pipe(
        Effect.map((rows) =>
          rows.length === 0
            ? Option.none<Snapshot>()
            : Option.some({ seq: Number(rows[0].seq), version: Number(rows[0].version), state: rows[0].state })
        ),
        Effect.mapError(storeError("loadSnapshot", `could not read the snapshot of tree ${treeId}`))
      )

    // -------------------------------------------------------------------------
    // Secrets of trees: ciphertext by name, replaced whole
    // -------------------------------------------------------------------------

    const saveSecret = (treeId: SessionId, name: string, value: string) =>
      sql`INSERT INTO parley_secrets (tree_id, name, value) VALUES (${treeId}, ${name}, ${value})
        ON CONFLICT (tree_id, name) DO UPDATE SET value = excluded.value`.pipe(
        Effect.asVoid,
        Effect.mapError(storeError("saveSecret", `could not save a secret of tree ${treeId}`))
      )

    const loadSecret = (treeId: SessionId, name: string) =>
      sql<{ readonly value: string }>`SELECT value FROM parley_secrets WHERE tree_id = ${treeId} AND name = ${name}`
        .pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.value)),
          Effect.mapError(storeError("loadSecret", `could not read a secret of tree ${treeId}`))
        )

    const deleteSecret = (treeId: SessionId, name: string) =>
      sql`DELETE FROM parley_secrets WHERE tree_id = ${treeId} AND name = ${name}`.pipe(
        Effect.asVoid,
        Effect.mapError(storeError("deleteSecret", `could not delete a secret of tree ${treeId}`))
      )

    // -------------------------------------------------------------------------
    // The service
    // -------------------------------------------------------------------------

    const service: Service = {
      createTree: (tree) =>
        Effect.flatMap(
          encodeTree(tree),
          (row) => write<StoreError>((done) => ({ _tag: "CreateTree", tree, row, done }))
        ),
      getTree: reads.getTree,
      treeOf: reads.treeOf,
      append: (treeId, expectedSeq, events, lease, durability = "sync") =>
        Effect.gen(function*() {
          if (events.length === 0) return
          if (events.some((event, i) => event.seq !== expectedSeq + i)) {
            const actual = yield* reads.nextSeqOf("append", treeId)
            if (Option.isNone(actual)) {
              return yield* new StoreError({ method: "append", description: `there is no tree ${treeId}` })
            }
            return yield* new SeqConflict({ treeId, expected: expectedSeq, actual: actual.value })
          }
          const rows = yield* Effect.forEach(events, (event) => encodeEvent("append", treeId, event))
          return yield* write<Writes.AppendError>((done) => ({
            _tag: "Append",
            treeId,
            expectedSeq,
            events,
            rows,
            lease,
            durability,
            done
          }))
        }),
      read: (treeId, from) => reads.readEvents("read", treeId, from),
      subscribe: (treeId, from, sessionId) => fanout.subscribe(treeId, from, sessionId),
      publish: (treeId, events) => Effect.sync(() => fanout.publish(treeId, events)),
      // Subscribed at once (no change is missed between the call and the first read), then moved into a mailbox.
      changes: Effect.flatMap(PubSub.subscribe(changes), (subscription) =>
        Mailbox.fromStream(Stream.fromQueue(subscription))),
      ...Leases.make(database),
      listOpen: (filter) => {
        const bySession = filter?.sessionId === undefined
          ? sql.literal("")
          : sql`AND c.session_id = ${filter.sessionId}`
        const byKind = filter?.kind === undefined ? sql.literal("") : sql`AND c.kind = ${filter.kind}`
        return sql<{
          readonly callback_id: string
          readonly tree_id: string
          readonly session_id: string
          readonly turn_id: string
          readonly kind: string
          readonly seq: number | string
        }>`SELECT c.callback_id, c.tree_id, c.session_id, c.turn_id, c.kind, c.seq FROM parley_callbacks c
          WHERE NOT EXISTS (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id)
          ${bySession} ${byKind} ORDER BY c.tree_id, c.seq`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
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
      saveSnapshot,
      loadSnapshot,
      saveSecret,
      loadSecret,
      deleteSecret
    }
    return service
  })
