/**
 * The log layer's services (`EventLog`, `Leases`, `Snapshots`, `Secrets` of `@parley/log`: a `SessionStore`) on
 * `@effect/sql`: a SQLite file (the embedded default) or PostgreSQL. The event log is `@parley/log`'s `EventLog.make`
 * over this package's row-level driver, which writes and reads rows and tells of other processes' appends.
 *
 * - Tables (created by `@effect/sql`'s `Migrator`, recorded in `parley_migrations`): `parley_trees` (header and log
 *   length), `parley_events` (the log, primary key `(tree_id, seq)`, each event's JSON with its schema `version`),
 *   `parley_sessions` (session → tree), `parley_callbacks` (callback id → tree) and `parley_callback_resolutions`
 *   (primary key `callback_id`: a second resolution of a callback inserts nothing and fails its append).
 * - Group commit: concurrent appends (to any trees) share one transaction; a conflicting append fails alone (the
 *   others are then run again, each in its own SAVEPOINT). An append is one compare-and-set of its tree's length: a lost race is a
 *   `SeqConflict`, in this process or in another.
 * - `changes` and `tail` see appends by other processes on the same database: SQLite polls a change counter at once
 *   when a watch of the file (inotify) sees a write, and every 250 ms anyway; PostgreSQL uses LISTEN/NOTIFY. Appends
 *   of this process reach them at once.
 * - Every failure (I/O, a lost connection, a row that does not decode, a failed migration) is a typed `StoreError`.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
 * import { SqlStore } from "@parley/store-sql"
 * import { Layer } from "effect"
 *
 * // Sessions survive restarts: they live in .parley/sessions.db. (`SqlRuntime.layerSqlite` is this in one layer.)
 * const Runtime = (models: Models.Service) =>
 *   LocalTransport.layer.pipe(
 *     Layer.provide([
 *       SqlStore.layerSqlite({ filename: ".parley/sessions.db" }),
 *       Connectors.layer([]),
 *       RuntimeTools.layerEmpty,
 *       Models.layer(models)
 *     ])
 *   )
 *
 * // The same on PostgreSQL:
 * const Store = SqlStore.layerPg({ url: "postgres://parley:parley@127.0.0.1:5432/parley" })
 * ```
 *
 * @since 0.1.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as EventLog from "@parley/log/EventLog"
import * as SessionStore from "@parley/log/SessionStore"
import { StoreError } from "@parley/log/StoreError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SqlClient from "effect/sql/SqlClient"
import * as fs from "node:fs"
import * as path from "node:path"
import * as internal from "./internal/sqlStore.js"
import * as SqliteClient from "./SqliteClient.js"

/**
 * How the store uses its database.
 *
 * - `synchronous`: `"full"` (the default) syncs every durable point to disk before it is acknowledged — an append the
 *   engine marks `"sync"`: a callback anyone may see, a tool's start before its side effect, an answer before its
 *   caller hears it was accepted — so it survives a crash of the process, of the OS or of the power. The appends in
 *   between (a new message, a model step's result, a turn's end) are committed at once, visible to every process,
 *   without waiting for the disk (SQLite: `synchronous=NORMAL` for that commit; PostgreSQL:
 *   `synchronous_commit = off`), and reach it with the next synced commit: a killed process loses none of them, a
 *   machine that loses power may lose those after the last synced one. `"normal"` (SQLite) never waits for the disk.
 *   Group commit shares one sync between the appends of all trees that are waiting. `syncedCommits` counts them.
 * - `busyTimeout`: how long a write waits for a lock another process holds (default 5 seconds), then fails with a
 *   `StoreError`. SQLite: the file's write lock, waited for without blocking the process (`node:sqlite`'s own wait
 *   would stop the thread: every fiber, heartbeats included); a process stopped (`SIGSTOP`, a frozen VM) inside a write
 *   transaction holds the file until it continues. PostgreSQL: a tree's row (`lock_timeout`); and the server ends a
 *   transaction of this store left idle for longer (`idle_in_transaction_session_timeout`), so a stopped process
 *   holds no tree for longer than that.
 * - `lockTimeout` (SQLite): how long opening the store waits for another process's write lock (default 15 seconds).
 *   The store switches the file to WAL mode and runs its migrations without blocking the process: it tries again with
 *   backoff (5 ms, 10 ms, … then every 250 ms), logs once that it waits and for which file, and after `lockTimeout`
 *   fails with a `StoreError` that names the lock.
 * - `watch` (SQLite, default `true`): watch the database file and its write-ahead log (`fs.watch`: inotify on
 *   Linux), so an append by another process is noticed within a millisecond or two of its commit. Turn it off where
 *   file events do not come (some network or container file systems); the store then polls only.
 * - `pollInterval`: on SQLite, how often the store looks for appends of other processes anyway: the fallback when a
 *   file event is missed (default 250 ms with a watch, 25 ms without one or when the watch cannot start); on
 *   PostgreSQL, how often it checks that its LISTEN connection still answers and reads the changes a lost one missed
 *   (default 2 seconds; LISTEN itself tells of appends at once).
 * - `writers` (PostgreSQL): how many transactions the store runs at once (default 4); SQLite has one writer.
 * - `maxBatch`: the most appends one transaction takes (default 256).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly synchronous?: "full" | "normal" | undefined
  readonly busyTimeout?: Duration.Input | undefined
  readonly pollInterval?: Duration.Input | undefined
  readonly watch?: boolean | undefined
  readonly writers?: number | undefined
  readonly maxBatch?: number | undefined
  readonly lockTimeout?: Duration.Input | undefined
}

/**
 * A SQLite database file, opened in WAL mode.
 *
 * @since 0.1.0
 * @category Models
 */
export interface SqliteOptions extends Options {
  readonly filename: string
}

/**
 * A PostgreSQL database: a `url` (`postgres://user:password@host:port/database`) or the fields of
 * `@effect/sql-pg`'s `PgClientConfig`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface PgOptions extends Options, Omit<PgClient.PgPoolConfig, "url"> {
  readonly url?: string | Redacted.Redacted | undefined
}

/**
 * Builds the store on the `SqlClient` in context (SQLite or PostgreSQL; on PostgreSQL the `PgClient` service must be
 * there too, for LISTEN/NOTIFY — `PgClient.layer` provides both). Runs the migrations first; on SQLite it sets
 * `synchronous`, WAL mode and `busy_timeout` on the connection, and waits (up to `lockTimeout`, without blocking the
 * process) while another process holds the file's write lock. The writers and the watch for other processes'
 * appends live in the scope.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: (
  options?: Options
) => Effect.Effect<SessionStore.Services, StoreError, SqlClient.SqlClient | Scope.Scope> = internal.make

/**
 * The event log's row-level driver alone (`EventLog.Driver` of `@parley/log`), on the `SqlClient` in context, its
 * migrations run: `make` builds the event log on it with `EventLog.make`. For the driver's contract suite
 * (`@parley/testing/EventLogDriverSuite`) and drivers that wrap it.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeDriver: (
  options?: Options
) => Effect.Effect<EventLog.Driver, StoreError, SqlClient.SqlClient | Scope.Scope> = internal.makeDriver

/**
 * The store on the `SqlClient` the program provides.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  options?: Options
): Layer.Layer<SessionStore.SessionStore, StoreError, SqlClient.SqlClient> =>
  Layer.effectContext(Effect.map(make(options), SessionStore.context))

const messageOf = (cause: unknown): string => {
  const message = cause instanceof Error ? cause.message : String(cause)
  const inner = typeof cause === "object" && cause !== null && "cause" in cause ? cause.cause : undefined
  return inner instanceof Error ? `${message} (${inner.message})` : message
}

const openFailed = (method: string, what: string) => (cause: unknown) =>
  new StoreError({ module: "SqlStore", method, description: `could not open ${what}: ${messageOf(cause)}`, cause })

/** A file name (not `:memory:`, not empty), whose folder the store creates when missing. */
const folderOf = (filename: string): string | undefined =>
  filename === "" || filename === ":memory:" || filename.startsWith("file:") ? undefined : path.dirname(filename)

/**
 * The store in a SQLite file, in WAL mode, `synchronous=FULL` unless `synchronous: "normal"` is asked for. The file
 * and its tables are created when missing, and so is its folder (`.parley/sessions.db` works in a new project).
 * While another process holds the file's write lock, opening waits (see `lockTimeout` in {@link Options}).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<SessionStore.SessionStore, StoreError> =>
  Layer.effectContext(Effect.map(internal.make({ ...options, method: "layerSqlite" }), SessionStore.context)).pipe(
    Layer.provide(
      Layer.effectContext(
        Effect.gen(function*() {
          const folder = folderOf(options.filename)
          if (folder !== undefined) {
            yield* Effect.try({
              try: () => fs.mkdirSync(folder, { recursive: true }),
              catch: openFailed("layerSqlite", `the folder ${folder}`)
            })
          }
          // WAL mode is set by `make`, which waits for another process's lock without blocking the thread, for
          // `lockTimeout` (opening) or `busyTimeout` (writes): the client itself does not wait (`busyTimeout: 0`).
          const client = yield* SqliteClient.make({ filename: options.filename, disableWAL: true, busyTimeout: 0 })
            .pipe(
              Effect.mapError(openFailed("layerSqlite", options.filename))
            )
          return Context.make(SqlClient.SqlClient, client)
        })
      ).pipe(Layer.provide(Reactivity.layer))
    )
  )

/**
 * The store in a PostgreSQL database (its tables are created if missing).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerPg = (options: PgOptions): Layer.Layer<SessionStore.SessionStore, StoreError> => {
  const {
    busyTimeout: _b,
    lockTimeout: _l,
    maxBatch: _m,
    pollInterval: _p,
    synchronous: _s,
    url,
    watch: _watch,
    writers: _w,
    ...config
  } = options
  return layer(options).pipe(
    Layer.provide(
      Layer.effectContext(
        PgClient.make({
          ...config,
          url: typeof url === "string" ? Redacted.make(url) : url,
          startupParameters: { ...internal.pgStartupParameters(options), ...config.startupParameters }
        }).pipe(
          // Effect 4's pool connects on first use: a first statement tells an unreachable server at once.
          Effect.tap((client) => client`SELECT 1`),
          Effect.catchDefect((defect) => Effect.fail(defect)),
          Effect.mapError(openFailed("layerPg", "the PostgreSQL database")),
          Effect.map((client) => Context.make(SqlClient.SqlClient, client).pipe(Context.add(PgClient.PgClient, client)))
        )
      ).pipe(Layer.provide(Reactivity.layer))
    )
  )
}

/**
 * The commits the SQL stores of this process synced to disk (durable points; a group commit counts once): an Effect
 * `Metric` counter, `parley_store_synced_commits`.
 *
 * @since 0.1.0
 * @category Metrics
 */
export const syncedCommits = internal.syncedCommits
