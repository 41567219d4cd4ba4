/**
 * Events written by an older Parley (schema version 1) still load: `fixtures/version1/sessions.db` was written by
 * `fixtures/version1/write.ts` with the code of main on 2026-12-03, before the first event schema change. Today's
 * runtime opens a copy of it, folds the tree, answers the open approval and the turn completes. So does it with
 * `fixtures/effect3/sessions.db` and a PostgreSQL schema restored from `fixtures/effect3/postgres.sql`, both written by
 * the last Parley on Effect 3 (`fixtures/effect3/write.ts`; the schema dumped with `pg_dump --inserts`, its names
 * unqualified).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it } from "@effect/vitest"
import type { Transport } from "@parley/core"
import { Agent, Answer, CallbackHandler, Ids, Inbox, Session, Turn, TurnEvent } from "@parley/core"
import type * as SessionStore from "@parley/log/SessionStore"
import type { StoreError } from "@parley/log/StoreError"
import { SqliteClient } from "@parley/store-sql"
import { SqlRuntime, SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Effect, Layer, Redacted, Result } from "effect"
import type { Scope } from "effect"
import type * as LanguageModel from "effect/ai/LanguageModel"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "./databases.js"
import { mailer } from "./fixtures/version1/agent.js"

const FIXTURE = path.join(import.meta.dirname, "fixtures", "version1", "sessions.db")
const SESSION = "ses_c996254ada3f4019916e"

/** A database an older Parley wrote: its one session's turn 2 waits on the approval of `send_email`. */
interface Fixture {
  /** A fresh copy of it, as the stores and the runtime that open it, and a client of it. */
  readonly copy: Effect.Effect<Copy, unknown, Scope.Scope>
  readonly session: string
  /** The schema version of its 20 rows. */
  readonly version: number
  /** Who answered turn 1's two callbacks, as it says. */
  readonly answeredBefore: ReadonlyArray<string>
}

interface Copy {
  readonly store: Layer.Layer<SessionStore.SessionStore, StoreError>
  readonly runtime: Layer.Layer<Transport.Transport, StoreError, LanguageModel.LanguageModel>
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
}

/** A copy of a SQLite file. */
const sqliteCopy = (file: string): Effect.Effect<Copy, unknown, Scope.Scope> =>
  Effect.map(sqliteFile, (filename) => {
    fs.copyFileSync(file, filename)
    return {
      store: SqlStore.layerSqlite({ filename }),
      runtime: SqlRuntime.layerSqlite({ filename }),
      client: SqliteClient.layer({ filename })
    }
  })

/** A fresh PostgreSQL schema restored from a dump of one (`pg_dump --inserts`, names unqualified). */
const pgCopy = (dump: string): Effect.Effect<Copy, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const url = yield* pgSchema
    const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
    const statements = fs.readFileSync(dump, "utf8").split(/;\n/).map((text) => text.trim()).filter((text) =>
      text.length > 0
    )
    yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (const statement of statements) yield* sql.unsafe(statement)
    }).pipe(Effect.provide(client))
    return {
      store: SqlStore.layerPg({ url, maxConnections: 2 }),
      runtime: SqlRuntime.layerPg({ url, maxConnections: 4 }),
      client
    }
  })

/** Loads, folds, takes an answer to the open approval and completes the blocked turn. */
const resumesTheBlockedTurn = (fixture: Fixture) =>
  Effect.gen(function*() {
    const copy = yield* fixture.copy
    const store = yield* storeOf(copy.store)
    const sessionId = yield* Ids.sessionId(fixture.session)
    const before = yield* store.eventLog.read(sessionId, 0)
    assert.strictEqual(before.length, 20)
    const resolved = before.filter((event) => event._tag === "CallbackResolved")
    assert.deepStrictEqual(resolved.map((event) => event.answer?._tag), ["AllowApproval", "ClientToolResult"])

    const Runtime = copy.runtime.pipe(
      Layer.provide(ScriptedModel.layer([ScriptedModel.text("Told everyone.")]))
    )
    const state = yield* Effect.gen(function*() {
      const open = yield* Inbox.listOpen()
      assert.deepStrictEqual(open.map((o) => [o.callback.sessionId, o.callback._tag]), [[
        fixture.session,
        "OpenApproval"
      ]])
      const approval = open[0].callback
      assert.strictEqual(approval._tag === "OpenApproval" ? approval.request.tool.id : "", "client.send_email")
      const session = yield* Agent.session(mailer, fixture.session)
      const turn = yield* Session.turn(session, approval.turnId)
      yield* Inbox.answer(approval.id, new Answer.AllowApproval())
      return yield* Turn.result(turn).pipe(
        Effect.provide(CallbackHandler.layer({ clientTool: () => Answer.ClientToolResult.success({ sent: true }) }))
      )
    }).pipe(Effect.provide(Runtime))
    assert.strictEqual(state._tag, "Completed")
    assert.strictEqual(state._tag === "Completed" && state.text, "Told everyone.")
    const after = yield* store.eventLog.read(sessionId, 0)
    assert.strictEqual(after[after.length - 1]._tag, "TurnEnded")
    // The old rows stay as they were written; the new ones are of the current version and say who answered.
    const rows = yield* rowsOf(copy.client, fixture.session)
    assert.deepStrictEqual([...new Set(rows.filter((row) => row.seq < 20).map((row) => row.version))], [
      fixture.version
    ])
    assert.deepStrictEqual([...new Set(rows.filter((row) => row.seq >= 20).map((row) => row.version))], [
      TurnEvent.schemaVersion
    ])
    const answeredBy = after.flatMap((event) =>
      event._tag === "CallbackResolved" ? [event.answeredBy === undefined ? "none" : event.answeredBy._tag] : []
    )
    assert.deepStrictEqual(answeredBy, [...fixture.answeredBefore, "Client", "Handler"])
  })

describe("a SQLite file written at event schema version 1", () => {
  it.effect(
    "loads, folds, takes an answer to its open approval and completes the blocked turn",
    // Version 1 recorded nobody: the upcast leaves it absent rather than guess.
    () =>
      resumesTheBlockedTurn({
        copy: sqliteCopy(FIXTURE),
        session: SESSION,
        version: 1,
        answeredBefore: ["none", "none"]
      })
  )

  it.effect("a row of a version newer than the code is a StoreError saying so, and nothing is rewritten", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      fs.copyFileSync(FIXTURE, filename)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE parley_events SET version = 99 WHERE tree_id = ${SESSION} AND seq = 19`
      }).pipe(Effect.provide(SqliteClient.layer({ filename })))
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      const sessionId = yield* Ids.sessionId(SESSION)
      const error = yield* Effect.flip(store.eventLog.read(sessionId, 0))
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "event 19 of tree")
      assert.include(
        error.message,
        `schema version 99 is newer than this code reads (${TurnEvent.schemaVersion}): upgrade Parley`
      )
      // Nothing was rewritten: the version-1 rows and the unknown one are as they were.
      const rows = yield* rowsOf(SqliteClient.layer({ filename }), SESSION)
      assert.deepStrictEqual(rows.map((row) => row.version), [...Array(19).fill(1), 99])
      assert.deepStrictEqual(TurnEvent.upcast(0, {}), Result.fail("schema version 0 is not a version"))
    }))
})

const rowsOf = (client: Layer.Layer<SqlClient.SqlClient, unknown>, treeId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ readonly seq: number; readonly version: number }>`
      SELECT seq, version FROM parley_events WHERE tree_id = ${treeId} ORDER BY seq`
  }).pipe(Effect.provide(client))

describe("a SQLite file written by Parley on Effect 3 (main at 7567e2e, event schema version 4)", () => {
  it.effect(
    "loads, folds, takes an answer to its open approval and completes the blocked turn",
    () =>
      resumesTheBlockedTurn({
        copy: sqliteCopy(path.join(import.meta.dirname, "fixtures", "effect3", "sessions.db")),
        session: "ses_bb6913d434cc4b48ac30",
        version: 4,
        answeredBefore: ["Handler", "Handler"]
      })
  )
})

describe("a PostgreSQL schema written by Parley on Effect 3 (main at 7567e2e, event schema version 4)", () => {
  it.effect(
    "loads, folds, takes an answer to its open approval and completes the blocked turn",
    () =>
      resumesTheBlockedTurn({
        copy: pgCopy(path.join(import.meta.dirname, "fixtures", "effect3", "postgres.sql")),
        session: "ses_2bc3ba5030d543168c23",
        version: 4,
        answeredBefore: ["Handler", "Handler"]
      }),
    { timeout: 60_000 }
  )
})
