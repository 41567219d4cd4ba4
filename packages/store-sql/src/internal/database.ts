/**
 * The store's database: its dialect, its write transactions (with the wait for another process's lock) and its
 * schema (connection settings and migrations, run once when the store opens).
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { StoreError } from "@parley/log/StoreError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import type { SqlError } from "effect/sql/SqlError"
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

/** How a write transaction runs. */
export interface TransactionOptions {
  /** Whether it waits for another process's lock (default true); `false` fails at once (the caller retries). */
  readonly waits?: boolean | undefined
  /**
   * Whether its commit waits for the disk (default true). SQLite: `synchronous` (`FULL`, or `NORMAL` for a commit that
   * need not), set on the connection before `BEGIN` (SQLite refuses it inside a transaction); PostgreSQL:
   * `synchronous_commit = off` for a commit that need not.
   */
  readonly synced?: boolean | undefined
}

export interface Database {
  readonly sql: SqlClient.SqlClient
  readonly dialect: Dialect
  /** On PostgreSQL, the client LISTEN/NOTIFY runs on. */
  readonly pg: Option.Option<PgClient.PgClient>
  /** This store instance: the `changed_by` of its appends, the sender of its notifications. */
  readonly instance: string
  readonly options: Options
  /**
   * A write transaction (`withTransaction` of the client: nested ones are savepoints), its statements run on
   * `connection`. A failure of `body` rolls it back and is its failure; one of the database (`BEGIN`, `COMMIT`) is a
   * `SqlError`, or a `StoreError` once the wait for a lock gave up.
   */
  readonly transaction: <A, E, R>(
    body: (connection: Connection) => Effect.Effect<A, E, R>,
    options?: TransactionOptions
  ) => Effect.Effect<A, E | SqlError | StoreError, R>
  /** A write outside a transaction, waiting for another process's lock as a transaction does. */
  readonly awaitingLock: <A, E, R>(what: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreError, R>
  /** Called after each write transaction (SQLite's watch then knows the files as this store left them). */
  afterOwnWrite: () => void
}

/** A failure of a transaction's body, carried past the wait for a lock (which retries the database's failures only). */
class BodyFailure<E> {
  constructor(readonly error: E) {}
}

/** `busyTimeout` in milliseconds (default 5 seconds). */
export const busyMillisOf = (options: SqlStore.Options): number =>
  Math.max(1, Math.round(Duration.toMillis(Duration.fromInputUnsafe(options.busyTimeout ?? "5 seconds"))))

/**
 * PostgreSQL: the settings each transaction sets first (see `pgSettings`), for the whole session of a connection the
 * store opens itself (`layerPg`): a process stopped between `BEGIN` and its first statement is ended too.
 */
export const pgStartupParameters = (options: SqlStore.Options): Record<string, string> => ({
  lock_timeout: String(busyMillisOf(options)),
  idle_in_transaction_session_timeout: String(busyMillisOf(options))
})

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
    // Transactions: the client's (BEGIN IMMEDIATE on SQLite: take the write lock first, instead of failing when a read
    // turns into a write), waiting for another process's lock without blocking the process, every failure typed
    // -------------------------------------------------------------------------

    const busyMillis = busyMillisOf(options)
    /**
     * A write waits for another process's write lock without blocking this process: a SQLite driver's own wait
     * (`busy_timeout`) blocks the thread, so a file held by a stopped process would freeze every fiber here — its
     * heartbeats among them. The connection waits 10 ms at most; a write still locked out tries again after an
     * asynchronous pause (5 ms, 10 ms, then every 20 ms), for `busyTimeout` in all, then fails with a `StoreError`
     * naming the lock.
     */
    const awaitingLock = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
      dialect === "sqlite"
        ? SqliteLock.waitForLock(effect, {
          filename: options.filename,
          lockTimeout: busyMillis,
          method: options.method ?? "make",
          what,
          timeoutOption: "busyTimeout",
          warn: false,
          // Another process's write lasts milliseconds: try again soon, as SQLite's own busy handler would.
          maxDelay: "20 millis"
        })
        : effect

    /** SQLite's `synchronous` as this store last set it on the connection ("" when unknown). */
    let sqliteSynchronous = options.synchronous === "normal" ? "NORMAL" : "FULL"
    /** Sets SQLite's `synchronous` before a transaction begins, when it changes. */
    const sqliteSynchronousFor = (wanted: "FULL" | "NORMAL"): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (sqliteSynchronous === wanted) return Effect.void
        sqliteSynchronous = wanted
        return Effect.catch(
          Effect.asVoid(sql.unsafe(`PRAGMA synchronous = ${wanted}`)),
          () => Effect.sync(() => void (sqliteSynchronous = ""))
        )
      })

    // PostgreSQL: a write waits `busyTimeout` at most for a tree's row (`lock_timeout`), and a transaction left idle for
    // longer — its process stopped (SIGSTOP, a frozen VM) or wedged mid-batch — is ended by the server
    // (`idle_in_transaction_session_timeout`), which frees its trees for the others: a stopped owner never holds a tree
    // past its lease. Set first in the transaction, in one statement (with `synchronous_commit` when relaxed).
    const pgSettings = (synced: boolean) =>
      "SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $1, true)" +
      (synced ? "" : ", set_config('synchronous_commit', 'off', true)")

    const transaction = <A, E, R>(
      body: (connection: Connection) => Effect.Effect<A, E, R>,
      transactionOptions?: TransactionOptions
    ): Effect.Effect<A, E | SqlError | StoreError, R> => {
      const synced = transactionOptions?.synced ?? true
      // The transaction's connection: `withTransaction` provides it (its type does not take it out of the requirements).
      const inside = Effect.flatMap(Effect.service(sql.transactionService), ([connection]) =>
        Effect.mapError(
          dialect === "pg"
            ? Effect.andThen(connection.execute(pgSettings(synced), [String(busyMillis)], undefined), body(connection))
            : body(connection),
          (error) => new BodyFailure<E | SqlError>(error)
        )) as Effect.Effect<A, BodyFailure<E | SqlError>, R>
      const once = Effect.andThen(
        dialect === "sqlite" && options.synchronous !== "normal"
          ? sqliteSynchronousFor(synced ? "FULL" : "NORMAL")
          : Effect.void,
        // A failed body rolled the transaction back: it is carried as a value past the wait, which retries the
        // database's own failures only (a BEGIN that met the lock).
        Effect.catchIf(
          sql.withTransaction(inside),
          (error): error is BodyFailure<E | SqlError> => error instanceof BodyFailure,
          (failure) => Effect.succeed(failure)
        )
      )
      const waited = transactionOptions?.waits === false ? once : awaitingLock("a write", once)
      return waited.pipe(
        Effect.flatMap((result) =>
          result instanceof BodyFailure ? Effect.fail(result.error as E | SqlError) : Effect.succeed(result)
        ),
        Effect.ensuring(Effect.sync(() => database.afterOwnWrite()))
      )
    }
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

    /** A statement prepared for this run only (a failed prepare is not kept). */
    const unprepared = (statement: string): Effect.Effect<void, SqlError> =>
      Effect.asVoid(sql.unsafe(statement).unprepared)

    const configure = (millis: number) =>
      Effect.mapError(
        unprepared(`PRAGMA busy_timeout = ${millis}`),
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
      // `lockTimeout` at most. Even a PRAGMA reads the schema first, which a file locked in rollback-journal mode
      // refuses; these run unprepared. The migrations run in one transaction (BEGIN IMMEDIATE: the migrations table
      // is created under the write lock too), the migrator's own transaction a savepoint inside it.
      yield* configure(0)
      yield* SqliteLock.waitForLock(
        Effect.all([
          unprepared(`PRAGMA synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`),
          unprepared("PRAGMA journal_mode = WAL"),
          sql.withTransaction(migrate)
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
        Effect.catchCause((cause) =>
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
