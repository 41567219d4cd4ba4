/**
 * An `effect/sql` client for a SQLite file on Node's built-in `node:sqlite` (`DatabaseSync`, prepared statements; no
 * native addon): the store's embedded database. It stands where a stable `@effect/sql-sqlite-node` for Effect 4.1
 * will: this module is the whole driver, so such a release replaces this one file.
 *
 * - One connection, shared through a semaphore: a statement, a transaction (`withTransaction`) or a `reserve`d
 *   connection holds it until it ends, so a transaction never sees another fiber's statements. Nested transactions
 *   are savepoints (`SAVEPOINT` / `ROLLBACK TO` / `RELEASE`).
 * - WAL mode (unless `disableWAL`) and `synchronous` (`"full"` by default: every commit syncs the write-ahead log)
 *   are set when the file opens. A top-level transaction starts with `BEGIN IMMEDIATE`: it takes the write lock
 *   first, so a read never has to turn into a write that another process already holds.
 * - Waiting for another process's lock never blocks the event loop. `node:sqlite` is synchronous and SQLite's own busy
 *   handler sleeps on the thread (every fiber with it), so the connection's own `busy_timeout` is 0 and a database
 *   reported busy (`SQLITE_BUSY`, errcode 5, or `SQLITE_LOCKED`) is tried again after an asynchronous pause (1 ms,
 *   2 ms, … then every 20 ms), for `busyTimeout` in all (5 seconds by default), on the wall clock. A statement outside a
 *   transaction and the `BEGIN` of a transaction give the connection back between two tries (the process's other
 *   fibers read meanwhile); a `COMMIT` keeps it (its transaction is open). Past `busyTimeout` the failure is a
 *   `SqlError` whose reason is a `LockTimeoutError`.
 * - Every failure is a `SqlError`, its reason classified from SQLite's result code (`UniqueViolation`,
 *   `ConstraintError`, `LockTimeoutError`, `ConnectionError`, …), the `node:sqlite` error as its cause. Opening a file
 *   that cannot be opened fails `make` with one.
 * - `PRAGMA data_version` moves when another connection (another process) commits: what a watch for other writers'
 *   commits polls. The connection is one, so the client's own commits never move it.
 *
 * @example
 * ```ts
 * import { SqliteClient } from "@parley/store-sql"
 * import { Effect } from "effect"
 * import { SqlClient } from "effect/sql"
 *
 * const program = Effect.gen(function*() {
 *   const sql = yield* SqlClient.SqlClient
 *   yield* sql`CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`
 *   yield* sql.withTransaction(sql`INSERT INTO notes (text) VALUES (${"hello"})`)
 *   return yield* sql<{ readonly text: string }>`SELECT text FROM notes`
 * }).pipe(Effect.provide(SqliteClient.layer({ filename: "notes.db" })))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Client from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import {
  AuthenticationError,
  AuthorizationError,
  ConnectionError,
  ConstraintError,
  LockTimeoutError,
  SqlError,
  type SqlErrorReason,
  UniqueViolation,
  UnknownError
} from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
import { DatabaseSync, type SQLInputValue, type StatementResultingChanges, type StatementSync } from "node:sqlite"

const TypeId = "~@parley/store-sql/SqliteClient"

/**
 * A SQLite client: an `effect/sql` `SqlClient` (dialect `"sqlite"`, driver `"sqlite-node"`) on one `node:sqlite`
 * connection, with the configuration it was opened with.
 *
 * @since 0.1.0
 * @category Models
 */
export interface SqliteClient extends Client.Base {
  readonly [TypeId]: typeof TypeId
  readonly config: SqliteClientConfig
}

/**
 * The SQLite client in context (`layer` provides it and the generic `SqlClient`).
 *
 * @since 0.1.0
 * @category Services
 */
export const SqliteClient = Context.Service<SqliteClient, SqliteClient & Client.SqlClient>(
  "@parley/store-sql/SqliteClient"
)

/**
 * How the file is opened.
 *
 * - `filename`: the database file (created when missing), or `:memory:`.
 * - `readonly`: open it read-only (no WAL switch, transactions with a plain `BEGIN`).
 * - `disableWAL`: leave the file's journal mode as it is (by default it is switched to WAL).
 * - `synchronous`: SQLite's `synchronous` for this connection: `"full"` (SQLite's own default, left in place when
 *   the option is not given: every commit syncs the write-ahead log, so it survives a crash of the OS or a power cut),
 *   `"normal"` (a commit survives the process being killed, not the machine stopping), `"off"` or `"extra"`.
 * - `busyTimeout`: how long a statement or a transaction waits for another process's lock, asynchronously, before it
 *   fails with a `LockTimeoutError` (default 5 seconds; `0` fails at once).
 * - `prepareCacheSize`: how many prepared statements the connection keeps (default 200; the least recently used go).
 * - `transformResultNames` / `transformQueryNames`: column name transforms, as every `effect/sql` client has.
 *
 * @since 0.1.0
 * @category Models
 */
export interface SqliteClientConfig {
  readonly filename: string
  readonly readonly?: boolean | undefined
  readonly disableWAL?: boolean | undefined
  readonly synchronous?: "full" | "normal" | "off" | "extra" | undefined
  readonly busyTimeout?: Duration.Input | undefined
  readonly prepareCacheSize?: number | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  readonly transformResultNames?: ((str: string) => string) | undefined
  readonly transformQueryNames?: ((str: string) => string) | undefined
}

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

/**
 * The reason of a `node:sqlite` failure, from its result code (`errcode`, an extended code whose low byte is the
 * primary one); the error itself is the cause.
 */
const reasonOf = (cause: unknown, message: string, operation: string): SqlErrorReason => {
  const props = { cause, message, operation }
  const errcode = typeof cause === "object" && cause !== null && "errcode" in cause && typeof cause.errcode === "number"
    ? cause.errcode
    : undefined
  if (errcode === undefined) return new UnknownError(props)
  // SQLITE_CONSTRAINT_UNIQUE and SQLITE_CONSTRAINT_PRIMARYKEY
  if (errcode === 2067 || errcode === 1555) {
    const text = cause instanceof Error ? cause.message : ""
    const at = text.indexOf("constraint failed:")
    const constraint = at === -1 ? "" : text.slice(at + "constraint failed:".length).trim()
    return new UniqueViolation({ ...props, constraint: constraint === "" ? "unknown" : constraint })
  }
  switch (errcode & 0xff) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
      return new LockTimeoutError(props)
    case 3: // SQLITE_PERM
      return new AuthorizationError(props)
    case 14: // SQLITE_CANTOPEN
      return new ConnectionError(props)
    case 19: // SQLITE_CONSTRAINT
      return new ConstraintError(props)
    case 23: // SQLITE_AUTH
      return new AuthenticationError(props)
    default:
      return new UnknownError(props)
  }
}

const sqlError = (cause: unknown, message: string, operation: string) =>
  new SqlError({ reason: reasonOf(cause, message, operation) })

/** Whether the failure is another connection's lock (`SQLITE_BUSY` / `SQLITE_LOCKED`). */
const isLocked = (error: unknown): boolean => error instanceof SqlError && error.reason._tag === "LockTimeoutError"

// -----------------------------------------------------------------------------
// Waiting for a lock
// -----------------------------------------------------------------------------

/** Sleeps on the wall clock, whatever `Clock` the program runs under (a lock is held in real time). */
const sleepLive = (millis: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

/** The pause before try `attempt + 1`: 1, 2, 4, 8, 16 ms, then every 20 ms. */
const pauseBefore = (attempt: number): number => Math.min(20, 2 ** attempt)

/**
 * Runs `effect` again while it fails on a lock (`retries` tells which failures), after an asynchronous pause, until it
 * gets through or `millis` have passed; then its last failure stands.
 */
const awaitingLock = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  millis: number,
  retries: (error: E) => boolean
): Effect.Effect<A, E, R> =>
  millis <= 0 ? effect : Effect.gen(function*() {
    const deadline = performance.now() + millis
    for (let attempt = 0;; attempt++) {
      const exit = yield* Effect.exit(effect)
      if (Exit.isSuccess(exit)) return exit.value
      const error = exit.cause.reasons.length === 1 && exit.cause.reasons[0]._tag === "Fail"
        ? exit.cause.reasons[0].error
        : undefined
      const left = deadline - performance.now()
      if (error === undefined || !retries(error) || left <= 0) return yield* exit
      yield* sleepLive(Math.max(1, Math.min(pauseBefore(attempt), left)))
    }
  })

// -----------------------------------------------------------------------------
// The connection
// -----------------------------------------------------------------------------

/** A value `node:sqlite` binds: booleans as 0 / 1, `undefined` as NULL. */
const bindable = (value: unknown): SQLInputValue =>
  typeof value === "boolean" ? (value ? 1 : 0) : value === undefined ? null : value as SQLInputValue

interface Prepared {
  readonly statement: StatementSync
  /** Whether it returns rows (a query, a pragma, a write with RETURNING). */
  readonly reader: boolean
}

/** The connection of a client: the open database, its prepared statements, and the `effect/sql` interface. */
const openConnection = (options: SqliteClientConfig) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => new DatabaseSync(options.filename, { readOnly: options.readonly ?? false, timeout: 0 }),
        catch: (cause) => sqlError(cause, `Failed to open ${options.filename}`, "open")
      }),
      (db) => Effect.sync(() => db.isOpen && db.close())
    )
    const cacheSize = Math.max(0, options.prepareCacheSize ?? 200)
    const cache = new Map<string, Prepared>()

    const prepareNew = (sql: string): Prepared => {
      const statement = db.prepare(sql)
      return { statement, reader: statement.columns().length > 0 }
    }
    /** A prepared statement from the cache, or prepared now and kept (a failed prepare is not kept). */
    const prepare = (sql: string): Prepared => {
      const cached = cache.get(sql)
      if (cached !== undefined) {
        cache.delete(sql)
        cache.set(sql, cached)
        return cached
      }
      const prepared = prepareNew(sql)
      if (cacheSize > 0) {
        if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string)
        cache.set(sql, prepared)
      }
      return prepared
    }

    /** Runs `sql` with `params` bound: `statement.all` for a statement that reads, `statement.run` otherwise. */
    const execute = <Rows, Raw>(
      sql: string,
      params: ReadonlyArray<unknown>,
      prepared: boolean,
      arrays: boolean,
      onRun: (result: StatementResultingChanges) => Raw,
      onRows: (rows: ReadonlyArray<unknown>) => Rows
    ): Effect.Effect<Rows | Raw, SqlError> =>
      Effect.withFiber((fiber) => {
        const safeIntegers = fiber.getRef(Client.SafeIntegers)
        return Effect.try({
          try: () => {
            const { reader, statement } = prepared ? prepare(sql) : prepareNew(sql)
            statement.setReadBigInts(safeIntegers)
            statement.setReturnArrays(arrays)
            const values = params.map(bindable)
            return reader ? onRows(statement.all(...values)) : onRun(statement.run(...values))
          },
          catch: (cause) => sqlError(cause, "Failed to execute statement", "execute")
        })
      })

    /** The rows a statement read (objects by column name), none for one that writes. */
    const rowsOf = (sql: string, params: ReadonlyArray<unknown>, prepared: boolean) =>
      execute(sql, params, prepared, false, () => [] as ReadonlyArray<object>, (rows) => rows as ReadonlyArray<object>)
    /** The rows a statement read as arrays of values, none for one that writes. */
    const valuesOf = (sql: string, params: ReadonlyArray<unknown>, prepared: boolean) =>
      execute(
        sql,
        params,
        prepared,
        true,
        () => [] as ReadonlyArray<ReadonlyArray<unknown>>,
        (rows) => rows as ReadonlyArray<ReadonlyArray<unknown>>
      )

    const transformed = (
      effect: Effect.Effect<ReadonlyArray<object>, SqlError>,
      transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) => transformRows === undefined ? effect : Effect.map(effect, transformRows)

    const connection: Connection = {
      execute: (sql, params, transformRows) => transformed(rowsOf(sql, params, true), transformRows),
      executeRaw: (sql, params) =>
        execute(
          sql,
          params,
          true,
          false,
          (result) => ({ changes: result.changes, lastInsertRowid: result.lastInsertRowid }),
          (rows) => rows
        ),
      executeValues: (sql, params) => valuesOf(sql, params, true),
      executeValuesUnprepared: (sql, params) => valuesOf(sql, params, false),
      executeUnprepared: (sql, params, transformRows) => transformed(rowsOf(sql, params ?? [], false), transformRows),
      executeStream: (sql, params, transformRows) =>
        Stream.unwrap(
          Effect.map(
            transformed(rowsOf(sql, params, true), transformRows),
            (rows) => Stream.fromIterable(rows)
          )
        )
    }
    return { db, connection }
  })

// -----------------------------------------------------------------------------
// The client
// -----------------------------------------------------------------------------

/**
 * Opens the file (creating it when missing) and builds the client on it, in the scope: the connection is closed
 * with it. Switches the file to WAL mode (unless `disableWAL`) and sets `synchronous`, waiting for another process's
 * lock as statements do. Fails with a `SqlError` when the file cannot be opened or configured.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  options: SqliteClientConfig
): Effect.Effect<SqliteClient & Client.SqlClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const busyMillis = Math.max(0, Math.round(Duration.toMillis(options.busyTimeout ?? "5 seconds")))
    const waitMillis = Number.isFinite(busyMillis) ? busyMillis : 2_147_483_647
    const { connection, db } = yield* openConnection(options)

    const setUp = (sql: string) =>
      awaitingLock(Effect.asVoid(connection.executeUnprepared(sql, [], undefined)), waitMillis, isLocked)
    if (options.readonly !== true && options.disableWAL !== true) yield* setUp("PRAGMA journal_mode = WAL")
    if (options.synchronous !== undefined) yield* setUp(`PRAGMA synchronous = ${options.synchronous.toUpperCase()}`)

    const semaphore = yield* Semaphore.make(1)
    const acquirers = Client.makeSqliteAcquirers({
      connection: Effect.suspend(() =>
        db.isOpen
          ? Effect.succeed(connection)
          : Effect.fail(
            new SqlError({
              reason: new ConnectionError({
                cause: undefined,
                message: `${options.filename} is closed`,
                operation: "acquire"
              })
            })
          )
      ),
      semaphore,
      isTransaction: () => db.isOpen && db.isTransaction
    })

    /** The BEGINs that failed on a lock: the transaction is tried again from the start (nothing of it ran). */
    const lockedBegins = new WeakSet<object>()
    const begin = (conn: Connection, statement: string | undefined) =>
      Effect.tapError(
        Effect.asVoid(
          conn.executeUnprepared(statement ?? (options.readonly === true ? "BEGIN" : "BEGIN IMMEDIATE"), [], undefined)
        ),
        (error) => Effect.sync(() => isLocked(error) && lockedBegins.add(error))
      )

    const compiler = Statement.makeCompilerSqlite(options.transformQueryNames)
    const client = yield* Client.make({
      driver: "sqlite-node",
      acquirer: acquirers.acquirer,
      transactionAcquirer: acquirers.transactionAcquirer,
      // A statement outside a transaction gives the connection back while it waits for a lock.
      borrower: (f) => awaitingLock(acquirers.borrower(f), waitMillis, isLocked),
      compiler,
      begin,
      // A COMMIT waits on its open transaction's connection (SQLite allows trying it again after SQLITE_BUSY).
      commit: (conn) =>
        awaitingLock(Effect.asVoid(conn.executeUnprepared("COMMIT", [], undefined)), waitMillis, isLocked),
      onCommitFailure: acquirers.onCommitFailure,
      isTransaction: acquirers.isTransaction,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      spanAttributes: [
        ...(options.spanAttributes ? Object.entries(options.spanAttributes) : []),
        ["db.system.name", "sqlite"]
      ],
      transformRows: options.transformResultNames
        ? Statement.defaultTransforms(options.transformResultNames).array
        : undefined
    })

    const withTransaction = client.withTransaction
    return Object.assign(client, {
      [TypeId]: TypeId,
      config: options,
      // A transaction whose BEGIN met another process's lock starts again, after the connection went back.
      withTransaction: <R, E, A>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
        awaitingLock(
          withTransaction(effect),
          waitMillis,
          (error) => typeof error === "object" && error !== null && lockedBegins.has(error)
        )
    }) as SqliteClient & Client.SqlClient
  })

/**
 * The client in a layer, as both `SqliteClient` and the generic `SqlClient` (with the `Reactivity` it needs).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  config: SqliteClientConfig
): Layer.Layer<SqliteClient | Client.SqlClient, SqlError> =>
  Layer.effectContext(
    Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
