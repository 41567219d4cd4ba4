/**
 * The due-deadline index (migration `0007_due_deadlines`): each callback says whether it is resolved (`resolved`, set
 * by the append that resolves it, also when it was opened in the same append), a partial index holds the open ones
 * with a deadline by `expires_at`, and the query of `listOpen({ expiresBy })` — a cluster's wake-up pass — reads it.
 * The migration runs on an existing database (an older SQLite file; a PostgreSQL schema whose migration is undone),
 * marking the callbacks resolved before it; `EXPLAIN` shows the index used, on SQLite and on PostgreSQL with many
 * resolved callbacks, and PostgreSQL counts a scan of it when the store itself runs the query.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Callback, Ids, Permissions, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqliteClient } from "@parley/store-sql"
import { SqlStore } from "@parley/store-sql"
import { Context, DateTime, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "./databases.js"

const treeId = Ids.SessionId.make("ses_due")
const turnId = Ids.TurnId.make("turn_due")
const at = DateTime.makeUnsafe(0)
/** The deadline of the callbacks that have one. */
const due = DateTime.makeUnsafe(1_000)
const common = { sessionId: treeId, turnId, at }
const callbackId = (name: string) => Ids.CallbackId.make(`cb_${name}`)

const queued = (seq: number) => new TurnEvent.TurnQueued({ ...common, seq, input: "hi" })
const opened = (seq: number, name: string, expiresAt: DateTime.Utc | undefined) =>
  new TurnEvent.CallbackOpened({
    ...common,
    seq,
    callback: new Callback.OpenApproval({
      id: callbackId(name),
      sessionId: treeId,
      turnId,
      openedAt: at,
      expiresAt,
      request: new Callback.ApprovalRequest({
        tool: new Callback.ToolRef({ id: Ids.ToolId.make("client.send_email"), name: "send_email" }),
        toolCallId: `call_${name}`,
        arguments: {},
        decidedBy: new Permissions.DefaultDecision()
      })
    })
  })
const expired = (seq: number, name: string) =>
  new TurnEvent.CallbackResolved({ ...common, seq, callbackId: callbackId(name), resolution: "expired" })

/**
 * Four callbacks: `a` resolved by a later append, `b` opened and resolved in one append, `c` open without a deadline,
 * `d` open and due. Only `d` is due.
 */
const fourCallbacks = (store: SessionStore.Services) =>
  Effect.gen(function*() {
    yield* store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })
    yield* store.eventLog.append(treeId, 0, [
      queued(0),
      opened(1, "a", due),
      opened(2, "b", due),
      expired(3, "b"),
      opened(4, "c", undefined),
      opened(5, "d", due)
    ])
    yield* store.eventLog.append(treeId, 6, [expired(6, "a")])
    const dueBy = (millis: number) =>
      Effect.map(store.eventLog.listOpen({ expiresBy: millis }), (rows) => rows.map((row) => row.callbackId))
    assert.deepStrictEqual(yield* dueBy(due.epochMilliseconds - 1), [])
    assert.deepStrictEqual(yield* dueBy(due.epochMilliseconds), [callbackId("d")])
  })

/** Each callback's `resolved`, by id. */
const flags = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ readonly callback_id: string; readonly resolved: number }>`
      SELECT callback_id, resolved FROM parley_callbacks ORDER BY callback_id`,
    (rows) => Object.fromEntries(rows.map((row) => [row.callback_id, Number(row.resolved)]))
  )

/** The query of `listOpen({ expiresBy })` (`internal/driver.ts`), due by 5 s after the epoch. */
const dueQuery = `SELECT c.callback_id, c.tree_id, c.session_id, c.turn_id, c.kind, c.seq,
  EXISTS (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id) AS answered
  FROM parley_callbacks c WHERE c.resolved = 0 AND c.expires_at IS NOT NULL AND c.expires_at <= 5000
  ORDER BY c.tree_id, c.seq`

/** The store and the client it runs on. */
const withClient = <E>(client: Layer.Layer<SqlClient.SqlClient, E>) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Layer.provideMerge(SqlStore.layer(), client))
    return { store: SessionStore.get(context), sql: Context.get(context, SqlClient.SqlClient) }
  })

const FIXTURE = path.join(import.meta.dirname, "fixtures", "version1", "sessions.db")

describe("the due-deadline index on SQLite", () => {
  it.effect("resolved callbacks are marked, also one opened in the same append; the due query uses the index", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename: yield* sqliteFile }))
      yield* fourCallbacks(store)
      assert.deepStrictEqual(yield* flags(sql), { cb_a: 1, cb_b: 1, cb_c: 0, cb_d: 0 })
      const plan = yield* sql.unsafe<{ readonly detail: string }>(`EXPLAIN QUERY PLAN ${dueQuery}`)
      assert.isTrue(
        plan.some((step) => step.detail.includes("USING INDEX parley_callbacks_due")),
        plan.map((step) => step.detail).join("\n")
      )
      // A resolution written without the mark (by a process of an older version) still takes the callback out.
      yield* sql`INSERT INTO parley_callback_resolutions ${
        sql.insert({ callback_id: "cb_d", tree_id: treeId, seq: 7, resolution: "expired" })
      }`
      assert.deepStrictEqual(yield* store.eventLog.listOpen({ expiresBy: due.epochMilliseconds }), [])
    }))

  it.effect("an existing file (written before the migration) is migrated: its resolved callbacks marked", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      fs.copyFileSync(FIXTURE, filename)
      const sql = Context.get(yield* Layer.build(SqliteClient.layer({ filename })), SqlClient.SqlClient)
      const before = yield* sql<{ readonly migration_id: number }>`SELECT migration_id FROM parley_migrations`
      assert.deepStrictEqual(before.map((row) => row.migration_id), [1, 2, 3, 4])
      yield* storeOf(SqlStore.layerSqlite({ filename }))
      const after = yield* sql<{ readonly migration_id: number }>`SELECT migration_id FROM parley_migrations`
      assert.deepStrictEqual(after.map((row) => row.migration_id), [1, 2, 3, 4, 5, 6, 7, 8])
      const rows = yield* sql<{ readonly resolved: number; readonly answered: number }>`
        SELECT c.resolved, (SELECT COUNT(*) FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id)
          AS answered FROM parley_callbacks c ORDER BY c.seq`
      // Two answered before the migration, one still open.
      assert.deepStrictEqual(rows.map((row) => [Number(row.resolved), Number(row.answered)]), [[1, 1], [1, 1], [0, 0]])
      const index = yield* sql<{ readonly sql: string }>`
        SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'parley_callbacks_due'`
      assert.include(index[0].sql, "WHERE resolved = 0 AND expires_at IS NOT NULL")
    }))
})

describe("the due-deadline index on PostgreSQL", () => {
  it.live("resolved callbacks are marked; with many resolved ones EXPLAIN shows the index, and the store scans it", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const { sql, store } = yield* withClient(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
      yield* fourCallbacks(store)
      assert.deepStrictEqual(yield* flags(sql), { cb_a: 1, cb_b: 1, cb_c: 0, cb_d: 0 })
      // 20,000 callbacks of other trees resolved long ago, all with a past deadline: what the wake-up pass must skip.
      yield* sql`INSERT INTO parley_callbacks (callback_id, tree_id, session_id, turn_id, kind, seq, expires_at, resolved)
        SELECT 'cb_old_' || i, 'ses_old_' || (i / 10), 'ses_old_' || (i / 10), 'turn_old', 'approval', i % 10, i, 1
        FROM generate_series(1, 20000) AS i`
      yield* sql`INSERT INTO parley_callback_resolutions (callback_id, tree_id, seq, resolution)
        SELECT 'cb_old_' || i, 'ses_old_' || (i / 10), i % 10 + 1, 'expired' FROM generate_series(1, 20000) AS i`
      yield* sql`ANALYZE parley_callbacks`
      yield* sql`ANALYZE parley_callback_resolutions`
      const plan = yield* sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${dueQuery}`)
      const text = plan.map((row) => row["QUERY PLAN"]).join("\n")
      // Read from the index, each due row checked by a probe of the resolutions' key: never a scan of either table.
      assert.include(text, "Index Scan using parley_callbacks_due on parley_callbacks c", text)
      assert.include(text, "using parley_callback_resolutions_pkey", text)
      assert.notInclude(text, "Seq Scan", text)

      // The store's own query scans the index (PostgreSQL's statistics count it).
      const scans = Effect.andThen(
        sql`SELECT pg_stat_clear_snapshot()`,
        Effect.map(
          sql<{ readonly scans: number | string }>`SELECT idx_scan AS scans FROM pg_stat_user_indexes
            WHERE indexrelname = 'parley_callbacks_due' AND schemaname = current_schema()`,
          (rows) => Number(rows[0].scans)
        )
      )
      const first = yield* scans
      const open = yield* store.eventLog.listOpen({ expiresBy: due.epochMilliseconds })
      assert.deepStrictEqual(open.map((row) => row.callbackId), [callbackId("d")])
      let counted = first
      for (let i = 0; i < 40 && counted === first; i++) {
        yield* Effect.sleep("100 millis")
        counted = yield* scans
      }
      assert.isAbove(counted, first)
    }))

  it.effect("an existing schema is migrated: its resolved callbacks marked, the index made", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })
      const { sql, store } = yield* withClient(client)
      yield* fourCallbacks(store)
      // The schema as it was before the migration: no column, no index, the migration not recorded.
      yield* sql`DROP INDEX parley_callbacks_due`
      yield* sql`ALTER TABLE parley_callbacks DROP COLUMN resolved`
      // (Nor the later ones: the migrator runs those after the last one recorded.)
      yield* sql`DROP TABLE parley_deliveries`
      yield* sql`DROP TABLE parley_outbox`
      yield* sql`DELETE FROM parley_migrations WHERE migration_id >= 7`
      const reopened = yield* withClient(client)
      assert.deepStrictEqual(yield* flags(reopened.sql), { cb_a: 1, cb_b: 1, cb_c: 0, cb_d: 0 })
      const index = yield* sql<{ readonly definition: string }>`SELECT indexdef AS definition FROM pg_indexes
        WHERE indexname = 'parley_callbacks_due' AND schemaname = current_schema()`
      assert.include(index[0].definition, "WHERE ((resolved = 0) AND (expires_at IS NOT NULL))")
      const open = yield* reopened.store.eventLog.listOpen({ expiresBy: due.epochMilliseconds })
      assert.deepStrictEqual(open.map((row) => row.callbackId), [callbackId("d")])
    }))
})
