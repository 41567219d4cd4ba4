/**
 * The session stores the workload runs on, each a fresh database per phase:
 *
 * - `memory`: `SessionStore.layerMemory` (the rows of issue 8);
 * - `sqlite`: `@parley/store-sql` on a new SQLite file in a temporary folder (WAL, `synchronous=FULL`: every event is
 *   durable before anyone sees it);
 * - `pg(url)`: `@parley/store-sql` on a new schema of the PostgreSQL database at `url`, dropped after the phase.
 *
 * The SQL stores are built with `SqlStore.layer` over a client the bench opens itself (as `layerSqlite` / `layerPg`
 * do), so the bench can meter the database underneath: write transactions (the store's `BEGIN … COMMIT`s, counted
 * where the store opens one with `withTransaction`), the bytes the store's tables take (SQLite: `page_count ×
 * page_size`; PostgreSQL: `pg_total_relation_size` of the `parley_*` tables) and the events stored.
 */
import { PgClient } from "@effect/sql-pg"
import { SessionStore } from "@parley/runtime"
import { SqliteClient, SqlStore } from "@parley/store-sql"
import { Context, Data, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Where a store's database is, as another process opens it (`answerProcess.ts`, `pausedProcess.ts`). */
export type Location =
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Pg"; readonly url: string }

/** What the bench reads from a SQL database between two points of a phase. */
export interface Meters {
  /** Write transactions the store has begun so far (on SQLite: `BEGIN IMMEDIATE … COMMIT`). */
  readonly transactions: () => number
  /** Bytes the store's tables take now. */
  readonly bytes: Effect.Effect<number, SqlError>
  /** Events stored now. */
  readonly events: Effect.Effect<number, SqlError>
}

export interface Database {
  readonly location: Location
  readonly layer: Layer.Layer<SessionStore.SessionStore, SessionStore.StoreError>
  readonly meters: Option.Option<Meters>
}

export interface BenchStore {
  /** How the rows name it. */
  readonly name: string
  /** A fresh database for one phase, gone with the scope. */
  readonly open: Effect.Effect<Database, StoreUnavailable, Scope.Scope>
}

/** The database could not be opened (PostgreSQL not running, …). */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{
  readonly store: string
  readonly detail: string
}> {
  override get message(): string {
    return `${this.store}: ${this.detail}`
  }
}

const messageOf = (cause: unknown): string => {
  const message = cause instanceof Error ? cause.message : String(cause)
  const inner = typeof cause === "object" && cause !== null && "cause" in cause ? cause.cause : undefined
  return inner instanceof Error ? `${message} (${inner.message})` : message
}

/** The client with every outermost `withTransaction` counted (a nested one is a savepoint of the same transaction). */
const counted = (client: SqlClient.SqlClient, count: () => void): SqlClient.SqlClient =>
  new Proxy(client, {
    get: (target, property, receiver) =>
      property === "withTransaction"
        ? <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          Effect.flatMap(Effect.serviceOption(target.transactionService), (open) => {
            if (Option.isNone(open)) count()
            return target.withTransaction(effect)
          })
        : Reflect.get(target, property, receiver)
  })

export const memory: BenchStore = {
  name: "memory",
  open: Effect.succeed({ location: { _tag: "Memory" }, layer: SessionStore.layerMemory, meters: Option.none() })
}

/** A temporary folder (removed with the scope). */
const temporaryFolder = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-"))),
  (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
)

/** A new SQLite file in a temporary folder; `synchronous=FULL` (the store's default) unless told otherwise. */
export const sqlite = (options: SqlStore.Options = {}): BenchStore => ({
  name: `SQLite file (synchronous=${options.synchronous === "normal" ? "NORMAL" : "FULL"})`,
  open: Effect.gen(function*() {
    const filename = path.join(yield* temporaryFolder, "sessions.db")
    const client = yield* Layer.build(SqliteClient.layer({ filename })).pipe(
      Effect.map((context) => Context.get(context, SqlClient.SqlClient)),
      Effect.catchDefect((defect) => Effect.fail(defect)),
      Effect.mapError((cause) => new StoreUnavailable({ store: "SQLite", detail: messageOf(cause) }))
    )
    let transactions = 0
    const layer = SqlStore.layer(options).pipe(
      Layer.provide(Layer.succeed(SqlClient.SqlClient, counted(client, () => transactions++)))
    )
    const database: Database = {
      location: { _tag: "Sqlite", filename },
      layer,
      meters: Option.some({
        transactions: () => transactions,
        bytes: Effect.map(
          Effect.zip(
            client<{ readonly page_count: number }>`PRAGMA page_count`,
            client<{ readonly page_size: number }>`PRAGMA page_size`
          ),
          ([[count], [size]]) => Number(count.page_count) * Number(size.page_size)
        ),
        events: Effect.map(
          client<{ readonly n: number }>`SELECT COUNT(*) AS n FROM parley_events`,
          ([row]) => Number(row.n)
        )
      })
    }
    return database
  })
})

/** `url` with its password hidden, for the rows. */
export const redactUrl = (url: string): string => url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@")

const withSearchPath = (url: string, schema: string) =>
  `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`

const pgClient = (url: string, maxConnections: number) =>
  Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections, connectTimeout: "3 seconds" })).pipe(
    Effect.map((context) => Context.get(context, PgClient.PgClient)),
    Effect.catchDefect((defect) => Effect.fail(defect)),
    Effect.mapError((cause) =>
      new StoreUnavailable({ store: "PostgreSQL", detail: `no PostgreSQL at ${redactUrl(url)} (${messageOf(cause)})` })
    )
  )

/** Whether PostgreSQL answers at `url`. */
export const probePg = (url: string): Effect.Effect<void, StoreUnavailable> =>
  Effect.scoped(Effect.asVoid(pgClient(url, 1)))

/** A new schema (dropped with the scope) in the PostgreSQL database at `url`; the store's pool has 10 connections. */
export const pg = (url: string): BenchStore => ({
  name: "PostgreSQL (local)",
  open: Effect.gen(function*() {
    const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
    const admin = yield* pgClient(url, 1)
    yield* Effect.acquireRelease(
      admin`CREATE SCHEMA ${admin(schema)}`,
      () => Effect.ignore(admin`DROP SCHEMA ${admin(schema)} CASCADE`)
    ).pipe(Effect.mapError((cause) => new StoreUnavailable({ store: "PostgreSQL", detail: messageOf(cause) })))
    const scopedUrl = withSearchPath(url, schema)
    const client = yield* pgClient(scopedUrl, 10)
    let transactions = 0
    const layer = SqlStore.layer().pipe(
      Layer.provide(
        Layer.succeedContext(
          Context.make(SqlClient.SqlClient, counted(client, () => transactions++)).pipe(
            Context.add(PgClient.PgClient, client)
          )
        )
      )
    )
    const database: Database = {
      location: { _tag: "Pg", url: scopedUrl },
      layer,
      meters: Option.some({
        transactions: () => transactions,
        bytes: Effect.map(
          client<{ readonly bytes: string | number | null }>`
            SELECT SUM(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ${schema} AND c.relkind = 'r' AND c.relname LIKE 'parley%'`,
          ([row]) => Number(row.bytes ?? 0)
        ),
        events: Effect.map(
          client<{ readonly n: string | number }>`SELECT COUNT(*) AS n FROM parley_events`,
          ([row]) => Number(row.n)
        )
      })
    }
    return database
  })
})

/** The store on a database another process opened (`Location`), as that process's own layer. */
export const layerAt = (location: Location): Layer.Layer<SessionStore.SessionStore, SessionStore.StoreError> => {
  switch (location._tag) {
    case "Memory":
      return SessionStore.layerMemory
    case "Sqlite":
      return SqlStore.layerSqlite({ filename: location.filename })
    case "Pg":
      return SqlStore.layerPg({ url: location.url, maxConnections: 4 })
  }
}
