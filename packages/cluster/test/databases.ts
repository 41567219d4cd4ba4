/**
 * Databases for the tests: a temporary SQLite file, or a fresh schema of the test PostgreSQL database (when it is not
 * reachable the PostgreSQL tests fail; they never skip); and free ports for runners (`Ports` of @parley/testing).
 */
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Ports } from "@parley/testing"
import { FileSystem } from "effect"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import type { Duration } from "effect"

/** A temporary SQLite file (removed with the scope). */
export const sqliteFile = Effect.map(
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.makeTempDirectoryScoped({ prefix: "parley-cluster-" })),
    Effect.provide(NodeFileSystem.layer)
  ),
  (directory) => `${directory}/sessions.db`
)

/** The test PostgreSQL database (`scripts/postgres.sh` sets it up; `PARLEY_TEST_PG_URL` overrides it). */
export const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"

/** A fresh schema in the test PostgreSQL database (dropped with the scope); the URL returned selects it. */
export const pgSchema = Effect.gen(function*() {
  const schema = `c_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  const admin = yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl), maxConnections: 1 }))
  const sql = Context.get(admin, PgClient.PgClient)
  yield* Effect.acquireRelease(
    sql`CREATE SCHEMA ${sql(schema)}`,
    () => Effect.ignore(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
  )
  return `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`
})

/** Sleeps in real time, whatever `Clock` the test runs under (a `TestClock` or the live one). */
export const sleepLive = (duration: Duration.Input) =>
  Effect.provideService(Effect.sleep(duration), Clock.Clock, Clock.Clock.defaultValue())

/** Free ports on 127.0.0.1 for runners that must know their address first. */
export const freePorts = Ports.free
