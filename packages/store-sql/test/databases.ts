/**
 * Fresh databases for the tests: a temporary SQLite file, or a fresh schema of the test PostgreSQL database.
 *
 * PostgreSQL: the tests connect to `PARLEY_TEST_PG_URL` (default
 * `postgres://parley:parley@127.0.0.1:5432/parley_test`, which `scripts/postgres.sh` sets up and `.ci/run` starts).
 * When it is not reachable the PostgreSQL tests fail; they never skip.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { SessionStore } from "@parley/runtime"
import { SqliteClient } from "@parley/store-sql"
import { SqlStore } from "@parley/store-sql"
import type * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
import { FileSystem } from "effect"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"

export const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"

const withSearchPath = (url: string, schema: string) =>
  `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`

/** Builds a layer into the current scope and returns its store. */
export const storeOf = <E>(layer: Layer.Layer<SessionStore.SessionStore, E>) =>
  Effect.map(Layer.build(layer), (context) => SessionStore.get(context))

/** Overwrites one stored event with JSON that is no event, through a client of its own. */
const corruptRow = <E>(client: Layer.Layer<SqlClient.SqlClient, E>) => (treeId: string, seq: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE parley_events SET event = ${"{\"_tag\":\"NotAnEvent\"}"}
      WHERE tree_id = ${treeId} AND seq = ${seq}`
  }).pipe(Effect.provide(client))

/** A temporary SQLite file (removed with the scope). */
export const sqliteFile = Effect.map(
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.makeTempDirectoryScoped({ prefix: "parley-store-" })),
    Effect.provide(NodeFileSystem.layer)
  ),
  (directory) => `${directory}/sessions.db`
)

/** The suite's database on a temporary SQLite file. */
export const sqliteDatabase = (options?: SqlStore.Options) =>
  Effect.map(sqliteFile, (filename): SessionStoreSuite.Database => ({
    open: storeOf(SqlStore.layerSqlite({ filename, ...options })),
    corrupt: corruptRow(SqliteClient.layer({ filename }))
  }))

/** A fresh schema in the test PostgreSQL database (dropped with the scope); its URL selects it. */
export const pgSchema = Effect.gen(function*() {
  const schema = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  const admin = yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl), maxConnections: 1 }))
  const sql = Context.get(admin, PgClient.PgClient)
  yield* Effect.acquireRelease(
    sql`CREATE SCHEMA ${sql(schema)}`,
    () => Effect.ignore(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
  )
  return withSearchPath(pgUrl, schema)
})

/** The suite's database on a fresh PostgreSQL schema. */
export const pgDatabase = (options?: SqlStore.Options) =>
  Effect.map(pgSchema, (url): SessionStoreSuite.Database => ({
    open: storeOf(SqlStore.layerPg({ url, maxConnections: 4, ...options })),
    corrupt: corruptRow(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  }))

/** The event log's driver alone on a temporary SQLite file (its contract suite). */
export const sqliteDriver = Effect.gen(function*() {
  const client = yield* Layer.build(SqliteClient.layer({ filename: yield* sqliteFile }))
  return yield* Effect.provide(SqlStore.makeDriver(), client)
})

/** The event log's driver alone on a fresh PostgreSQL schema. */
export const pgDriver = Effect.gen(function*() {
  const client = yield* Layer.build(PgClient.layer({ url: Redacted.make(yield* pgSchema), maxConnections: 4 }))
  return yield* Effect.provide(SqlStore.makeDriver(), client)
})
