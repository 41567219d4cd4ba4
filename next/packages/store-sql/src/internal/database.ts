/**
 * The store's database: its dialect, its write transactions (with the wait for another process's lock) and its
 * schema (connection settings and migrations, run once when the store opens).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { SqlError } from "effect/sql/SqlError"
import { StoreError } from "@parley/log/StoreError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as SqlStore from "../SqlStore.js"
import { messageOf } from "./errors.js"
import * as Migrations from "./migrations.js"
import * as SqliteLock from "./sqliteLock.js"

/** The public options (`SqlStore.Options`), and what the public constructors add. */
export interface Options extends SqlStore.Options {
  /** The file the store opens (for its errors and logs), when known. */
  readonly filename?: string | undefined
  /** The public constructor that opens the store (for its errors): `layerSqlite`, or `make` by default. */
  readonly method?: string | undefined
}

export type Dialect = "sqlite" | "pg"

export interface Database {
  readonly sql: SqlClient.SqlClient
  readonly dialect: Dialect
  /** On PostgreSQL, the client LISTEN/NOTIFY runs on. */
  readonly pg: Option.Option<PgClient.PgClient>
  /** This store instance: the `changed_by` of its appends, the sender of its notifications. */
  readonly instance: string
  readonly options: Options
  /**
   * A write transaction; `waits: false` fails at once when another process holds the lock (the caller retries).
   * `prelude` runs on the transaction's connection just before it begins (a setting SQLite refuses inside one).
   */
  readonly transaction: <A, E, R>(
    body: (connection: Connection) => Effect.Effect<A, E, R>,
    waits?: boolean,
    prelude?: ((connection: Connection) => Effect.Effect<void>) | undefined
  ) => Effect.Effect<A, E | SqlError | StoreError, R>
  /** A write outside a transaction, waiting for another process's lock as a transaction does. */
  readonly awaitingLock: <A, E, R>(what: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreError, R>
  /** Called after each write transaction (SQLite's watch then knows the files as this store left them). */
  afterOwnWrite: () => void
}

/** The database in context, its connection configured and its schema migrated. */
export const open = (
  options: Options
): Effect.Effect<Database, StoreError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = sql.onDialectOrElse<Dialect | undefined, Dialect, Dialect>({
      sqlite: () => "sqlite",
      pg: () => "pg",
      orElse: () => undefined
    })
    if (dialect === undefined) {
      return yield* new StoreError({ method: "make", description: "the SQL store runs on SQLite or PostgreSQL only" })
    }
    const pg = dialect === "pg" ? yield* Effect.serviceOption(PgClient.PgClient) : Option.none()
    if (dialect === "pg" && Option.isNone(pg)) {
      return yield* new StoreError({
        method: "make",
        description: "on PostgreSQL the store needs the PgClient service (for LISTEN/NOTIFY): use PgClient.layer"
      })
    }

    // -------------------------------------------------------------------------
    // Transactions: BEGIN IMMEDIATE on SQLite (take the write lock first, waiting up to the busy timeout, instead of
    // failing when a read turns into a write), and every failure typed (a failed COMMIT is a `SqlError`, not a defect)
    // -------------------------------------------------------------------------

    const busyTimeout = Duration.decode(options.busyTimeout ?? "5 seconds")
    const busyMillis = Math.max(1, Math.round(Duration.toMillis(busyTimeout)))
    // PostgreSQL: a write waits `busyTimeout` at most for a tree's row (`lock_timeout`), and a transaction left idle for
    // longer — its process stopped (SIGSTOP, a frozen VM) or wedged mid-batch — is ended by the server
    // (`idle_in_transaction_session_timeout`), which frees its trees for the others: a stopped owner never holds a tree
    // past its lease. Set with BEGIN, in the same round trip.
    const begin = dialect === "sqlite"
      ? "BEGIN IMMEDIATE"
      : `BEGIN; SET LOCAL lock_timeout = ${busyMillis}; SET LOCAL idle_in_transaction_session_timeout = ${busyMillis}`
    /**
     * A write waits for another process's write lock without blocking this process: better-sqlite3's own wait
     * (`busy_timeout`) blocks the thread, so a file held by a stopped process would freeze every fiber here — its
     * heartbeats among them. The connection waits 10 ms at most; a write still locked out tries again after an
     * asynchronous pause (5 ms, 10 ms, then every 20 ms), for `busyTimeout` in all, then fails with a `StoreError`
     * naming the lock.
     */
    const awaitingLock = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
      dialect === "sqlite"
        ? SqliteLock.waitForLock(effect, {
          filename: options.filename,
          lockTimeout: busyTimeout,
          method: options.method ?? "make",
          what,
          timeoutOption: "busyTimeout",
          warn: false,
          // Another process's write lasts milliseconds: try again soon, as SQLite's own busy handler would.
          maxDelay: "20 millis"
        })
        : effect
    const transaction = <A, E, R>(
      body: (connection: Connection) => Effect.Effect<A, E, R>,
      waits = true,
      prelude?: (connection: Connection) => Effect.Effect<void>
    ): Effect.Effect<A, E | SqlError | StoreError, R> =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        if (prelude !== undefined) yield* prelude(connection)
        const started = connection.executeUnprepared(begin, [], undefined)
        yield* waits ? awaitingLock("a write", started) : started
        const exit = yield* Effect.exit(
          Effect.provideService(body(connection), SqlClient.TransactionConnection, [connection, 0] as const)
        )
        if (Exit.isSuccess(exit)) {
          const committed = yield* Effect.exit(connection.executeUnprepared("COMMIT", [], undefined))
          if (Exit.isSuccess(committed)) return exit.value
          yield* Effect.ignore(connection.executeUnprepared("ROLLBACK", [], undefined))
          return yield* Effect.failCause(committed.cause)
        }
        yield* Effect.ignore(connection.executeUnprepared("ROLLBACK", [], undefined))
        return yield* Effect.failCause(exit.cause)
      })).pipe(Effect.ensuring(Effect.sync(() => database.afterOwnWrite())))
    const database: Database = {
      sql,
      dialect,
      pg,
      instance: crypto.randomUUID(),
      options,
      transaction,
      awaitingLock,
      afterOwnWrite: () => {}
    }

    // -------------------------------------------------------------------------
    // Connection settings and migrations
    // -------------------------------------------------------------------------

    /** A statement prepared for this run only (a failed prepare is a `SqlError`, and is not cached). */
    const unprepared = (statement: string): Effect.Effect<void, SqlError> =>
      Effect.scoped(Effect.flatMap(sql.reserve, (connection) =>
        Effect.flatten(Effect.try({
          try: () => Effect.asVoid(connection.executeUnprepared(statement, [], undefined)),
          catch: (cause) => new SqlError({ cause, message: `Failed to prepare ${statement}` })
        }))))

    const configure = (millis: number) =>
      Effect.mapError(
        sql.unsafe(`PRAGMA busy_timeout = ${millis}`),
        (cause) =>
          new StoreError({
            module: "SqlStore",
            method: options.method ?? "make",
            description: `could not configure the SQLite connection: ${messageOf(cause)}`,
            cause
          })
      )
    const migrate = Migrator.make({})({ loader: Migrations.loader, table: Migrations.table })
    if (dialect === "sqlite") {
      // SQLite's busy wait blocks the whole thread (the driver is synchronous): a store waiting for the write lock
      // would stall every fiber of this process (another store of it holding the lock mid-migration among them).
      // WAL mode and the migrations take the lock without waiting and try again after an asynchronous pause, for
      // `lockTimeout` at most.
      // Even a PRAGMA reads the schema first, which a file locked in rollback-journal mode refuses; these run
      // unprepared, because the client's cache of prepared statements would keep the failure of a locked prepare.
      yield* configure(0)
      yield* SqliteLock.waitForLock(
        Effect.all([
          unprepared(`PRAGMA synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`),
          unprepared("PRAGMA journal_mode = WAL"),
          transaction(() => migrate, false)
        ], { discard: true }),
        {
          filename: options.filename,
          lockTimeout: options.lockTimeout,
          method: options.method ?? "make",
          what: "opening the store (WAL mode, migrations)"
        }
      )
      yield* configure(Math.min(10, busyMillis))
    } else {
      yield* migrate.pipe(
        // Two processes creating the migrations table at once: the loser tries again and finds it.
        Effect.retry({ times: 3 }),
        Effect.catchAllCause((cause) =>
          Effect.fail(
            new StoreError({
              module: "SqlStore",
              method: options.method ?? "make",
              description: `the migrations failed: ${messageOf(cause)}`,
              cause
            })
          )
        )
      )
    }
    return database
  })
