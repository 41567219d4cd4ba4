/**
 * The `SessionStore` port on `@effect/sql` (SQLite and PostgreSQL).
 *
 * Writes (appends and new trees) go through a queue drained by writer fibers (one on SQLite, which has one writer;
 * a few on PostgreSQL): each takes every pending write and runs them in ONE transaction (group commit). When one of
 * them fails (a conflict), the transaction rolls back and the others run again, each in its own SAVEPOINT, so a
 * conflict fails only its own append. An append is a compare-and-set of its tree's
 * `next_seq` (`UPDATE … WHERE next_seq = expected`), so a lost race is a `SeqConflict` whatever the process; a
 * resolution is an `INSERT … ON CONFLICT DO NOTHING` into a table keyed by callback id, so a second one inserts
 * nothing and is a `ResolutionConflict`.
 *
 * After a commit, this process's tails get the appended events at once and `changes` the new length. Appends by
 * other processes are noticed by a poll of `parley_trees.change_id` on SQLite, run at once when a watch of the file
 * fires (`sqliteChanges.ts`), and by LISTEN/NOTIFY on PostgreSQL; tails then read what they miss from the table.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import type * as Callback from "@parley/core/Callback"
import type { SessionId } from "@parley/core/Ids"
import type { CallbackId, TurnId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Fanout from "@parley/runtime/Fanout"
import type { Durability, Lease, Service, Snapshot, StoredTree } from "@parley/runtime/SessionStore"
import { LeaseLost, ResolutionConflict, SeqConflict, StoreError } from "@parley/runtime/SessionStore"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Mailbox from "effect/Mailbox"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { EventRow, StoredEventRow, TreeRow } from "./codec.js"
import { decodeEvent, decodeTree, encodeEvent, encodeTree } from "./codec.js"
import { messageOf } from "./messageOf.js"
import * as Migrations from "./migrations.js"
import * as SqliteChanges from "./sqliteChanges.js"
import * as SqliteLock from "./sqliteLock.js"
import * as Statements from "./statements.js"

/** Commits the SQL stores synced to disk (durable points; group commit shares one between appends). */
export const syncedCommits = Metric.counter("parley_store_synced_commits", {
  description: "transactions of the SQL store committed with a sync to disk (durable points)"
})

export interface Options {
  readonly synchronous?: "full" | "normal" | undefined
  readonly busyTimeout?: Duration.DurationInput | undefined
  readonly pollInterval?: Duration.DurationInput | undefined
  readonly watch?: boolean | undefined
  readonly writers?: number | undefined
  readonly maxBatch?: number | undefined
  readonly lockTimeout?: Duration.DurationInput | undefined
  /** The file the store opens (for its errors and logs), when known. */
  readonly filename?: string | undefined
  /** The public constructor that opens the store (for its errors): `layerSqlite`, or `make` by default. */
  readonly method?: string | undefined
}

type Dialect = "sqlite" | "pg"

type AppendError = SeqConflict | ResolutionConflict | LeaseLost | StoreError

type Write =
  | {
    readonly _tag: "Append"
    readonly treeId: SessionId
    readonly expectedSeq: number
    readonly events: ReadonlyArray<TurnEvent>
    readonly rows: ReadonlyArray<EventRow>
    readonly lease: Lease | undefined
    readonly durability: Durability
    readonly done: Deferred.Deferred<void, AppendError>
  }
  | {
    readonly _tag: "CreateTree"
    readonly tree: StoredTree
    readonly row: TreeRow
    readonly done: Deferred.Deferred<void, StoreError>
  }

/** Fails a transaction run without savepoints when one of its writes failed, so it rolls back. */
class Rollback extends Data.TaggedError("Rollback")<{ readonly index: number; readonly error: AppendError }> {}

const storeError = (method: string, description: string) => (cause: unknown) =>
  new StoreError({ method, description: `${description}: ${messageOf(cause)}`, cause })

const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size))
  return chunks
}

/** How many sessions the in-process session → tree memory holds (it is cleared when full). */
const sessionsLimit = 100_000
/** How many trees keep their latest events in memory, and how many events each. */
const recentTrees = 512
const recentEvents = 64

export const make = (
  options: Options = {}
): Effect.Effect<Service, StoreError, SqlClient.SqlClient | Scope.Scope> =>
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
    const instance = crypto.randomUUID()

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
     * asynchronous pause (5 ms, 10 ms, … then every 250 ms), for `busyTimeout` in all, then fails with a `StoreError`
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
          warn: false
        })
        : effect
    /** Called after each write transaction: SQLite's watch then knows the files as this store left them. */
    let afterOwnWrite = (): void => {}
    /** A write transaction; `waits: false` fails at once when another process holds the lock (the caller retries). */
    const transaction = <A, E, R>(
      body: (connection: Connection) => Effect.Effect<A, E, R>,
      waits = true
    ): Effect.Effect<A, E | SqlError | StoreError, R> =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        yield* Effect.addFinalizer(() => Effect.sync(() => afterOwnWrite()))
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
      }))

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

    const configure = (busyTimeout: number) =>
      Effect.mapError(
        sql.unsafe(`PRAGMA busy_timeout = ${busyTimeout}`),
        (cause) =>
          new StoreError({
            module: "SqlStore",
            method: options.method ?? "make",
            description: `could not configure the SQLite connection: ${messageOf(cause)}`,
            cause
          })
      )
    const migrate = Migrator.make({})({ loader: Migrations.loader, table: Migrations.table })
    const lockOptions = {
      filename: options.filename,
      lockTimeout: options.lockTimeout,
      method: options.method ?? "make"
    }
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
        { ...lockOptions, what: "opening the store (WAL mode, migrations)" }
      )
      yield* configure(Math.min(10, Math.round(Duration.toMillis(busyTimeout))))
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

    // -------------------------------------------------------------------------
    // In-process fan-out: the subscribers of trees' events (`Fanout`, shared with every store), one PubSub for
    // `changes`
    // -------------------------------------------------------------------------

    const changes = yield* PubSub.unbounded<{ readonly treeId: SessionId; readonly nextSeq: number }>()
    // In-process memory, never the source of truth:
    // - session → tree, for sessions filed in `parley_sessions` (the mapping never changes once filed): `treeOf` and
    //   appends skip the database for them;
    // - the latest events of the trees this process appended to, so a new tail of an active tree starts without a
    //   read. An append by someone else to a tree drops its entry (its tails then read the table).
    const sessionTrees = new Map<string, SessionId>()
    const recent = new Map<SessionId, Array<TurnEvent>>()
    const fileSession = (session: string, treeId: SessionId) => {
      if (sessionTrees.size >= sessionsLimit) sessionTrees.clear()
      sessionTrees.set(session, treeId)
    }
    const remember = (treeId: SessionId, expectedSeq: number, events: ReadonlyArray<TurnEvent>) => {
      const known = recent.get(treeId)
      recent.delete(treeId)
      const last = known?.[known.length - 1]
      const kept = known !== undefined && last !== undefined && last.seq + 1 === expectedSeq
        ? known.concat(events)
        : [...events]
      recent.set(treeId, kept.length > recentEvents ? kept.slice(kept.length - recentEvents) : kept)
      if (recent.size > recentTrees) recent.delete(recent.keys().next().value as SessionId)
    }

    /**
     * An append by another process (or another store instance) was noticed. `changes` first, then the tails: an
     * engine hears of it before a reader of the tree's events can come asking the engine about what it read.
     */
    const foreignAppend = (treeId: SessionId, nextSeq: number) =>
      Effect.zipRight(
        Effect.sync(() => recent.delete(treeId)),
        Effect.zipRight(
          PubSub.publish(changes, { treeId, nextSeq }),
          Effect.sync(() => fanout.moved(treeId, nextSeq))
        )
      )

    // -------------------------------------------------------------------------
    // Reads
    // -------------------------------------------------------------------------

    // Every read runs to its end, even when its caller is interrupted (a wait that stopped, a handler whose callback
    // closed): on PostgreSQL, @effect/sql-pg cancels an interrupted query with `pg_cancel_backend(pid)`, which can
    // land after the query ended and its pooled connection went to another query — cancelling that one instead.
    const readEvents = (method: string, treeId: SessionId, from: number) =>
      Effect.uninterruptible(sql<StoredEventRow>`SELECT seq, version, event FROM parley_events
        WHERE tree_id = ${treeId} AND seq >= ${Math.max(0, from)} ORDER BY seq`).pipe(
        Effect.mapError(storeError(method, `could not read tree ${treeId}`)),
        Effect.flatMap((rows) => Effect.forEach(rows, (row) => decodeEvent(method, treeId, row)))
      )

    const nextSeqOf = (method: string, treeId: SessionId) =>
      Effect.uninterruptible(
        sql<{ readonly next_seq: number | string }>`SELECT next_seq FROM parley_trees WHERE tree_id = ${treeId}`
      ).pipe(
        Effect.mapError(storeError(method, `could not read tree ${treeId}`)),
        Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(Number(rows[0].next_seq)))
      )

    const getTree = (treeId: SessionId) =>
      Effect.uninterruptible(
        sql<TreeRow>`SELECT tree_id, version, agent, created_at FROM parley_trees WHERE tree_id = ${treeId}`
      ).pipe(
        Effect.mapError(storeError("getTree", `could not read tree ${treeId}`)),
        Effect.flatMap((rows) =>
          rows.length === 0 ? Effect.succeedNone : Effect.map(decodeTree(treeId, rows[0]), Option.some)
        )
      )

    const treeOf = (sessionId: SessionId) =>
      Effect.suspend(() => {
        const known = sessionTrees.get(sessionId)
        if (known !== undefined) return Effect.succeedSome(known)
        return Effect.uninterruptible(
          sql<{ readonly tree_id: string }>`SELECT tree_id FROM parley_sessions WHERE session_id = ${sessionId}`
        ).pipe(
          Effect.mapError(storeError("treeOf", `could not look up session ${sessionId}`)),
          Effect.map((rows) => {
            if (rows.length === 0) return Option.none()
            const treeId = rows[0].tree_id as SessionId
            fileSession(sessionId, treeId)
            return Option.some(treeId)
          })
        )
      })

    /** A tree's stored events from `from`: the latest ones of an active tree from memory, else from the table. */
    const readRecent = (treeId: SessionId, from: number) =>
      Effect.suspend(() => {
        const cached = recent.get(treeId)
        return cached !== undefined && cached[0].seq <= from
          ? Effect.succeed(cached.filter((event) => event.seq >= from))
          : readEvents("tail", treeId, from)
      })
    const fanout = Fanout.make({
      read: readRecent,
      exists: (treeId) => Effect.map(nextSeqOf("tail", treeId), Option.isSome)
    })

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
    // Writes: one write inside the batch's transaction
    // -------------------------------------------------------------------------

    const channel = dialect === "pg"
      ? yield* sql<{ readonly schema: string }>`SELECT current_schema() AS schema`.pipe(
        Effect.mapError(storeError("make", "could not read the current schema")),
        Effect.map((rows) => `parley_changes_${rows[0]?.schema ?? "public"}`.slice(0, 63))
      )
      : ""

    const statements = Statements.make(dialect)
    const placeholder = dialect === "sqlite" ? "?" : "$1"
    const run = (connection: Connection, text: string, params: ReadonlyArray<unknown>) =>
      connection.execute(text, params, undefined)

    const runAppend = (connection: Connection, write: Extract<Write, { _tag: "Append" }>) =>
      Effect.gen(function*() {
        const { events, expectedSeq, lease, rows, treeId } = write
        const nextSeq = expectedSeq + events.length
        let openTurns = 0
        for (const event of events) {
          if (event._tag === "TurnQueued") openTurns++
          else if (event._tag === "TurnEnded") openTurns--
        }
        const fence = lease === undefined ? [] : [lease.owner, lease.epoch]
        const paused = events[events.length - 1]._tag === "TurnBlocked" ? 1 : 0
        const moved = yield* run(
          connection,
          lease === undefined ? statements.casNextSeq : statements.casNextSeqFenced,
          dialect === "sqlite"
            ? [nextSeq, openTurns, paused, instance, treeId, expectedSeq, ...fence]
            : [
              nextSeq,
              openTurns,
              paused,
              instance,
              treeId,
              expectedSeq,
              ...fence,
              channel,
              `${instance} ${treeId} ${nextSeq}`
            ]
        )
        if (moved.length === 0) {
          const actual = yield* run(
            connection,
            "SELECT next_seq, owner, epoch FROM parley_trees WHERE tree_id = " + placeholder,
            [treeId]
          )
          if (actual.length === 0) {
            return yield* new StoreError({ method: "append", description: `there is no tree ${treeId}` })
          }
          const row = actual[0]
          if (lease !== undefined && (row.owner !== lease.owner || Number(row.epoch) !== lease.epoch)) {
            return yield* new LeaseLost({ treeId, owner: lease.owner, epoch: lease.epoch })
          }
          return yield* new SeqConflict({ treeId, expected: expectedSeq, actual: Number(row.next_seq) })
        }
        const resolutions: Array<ReadonlyArray<unknown>> = []
        const callbacks: Array<ReadonlyArray<unknown>> = []
        const sessions = new Map<string, number>()
        for (const event of events) {
          if (event._tag === "CallbackResolved") {
            resolutions.push([event.callbackId, treeId, event.seq, event.resolution])
          } else if (event._tag === "CallbackOpened") {
            const { callback } = event
            callbacks.push([
              callback.id,
              treeId,
              event.sessionId,
              event.turnId,
              callback.kind,
              event.seq,
              callback.expiresAt === undefined ? null : callback.expiresAt.epochMillis
            ])
          }
          if (!sessionTrees.has(event.sessionId) && !sessions.has(event.sessionId)) {
            sessions.set(event.sessionId, event.seq)
          }
        }
        // Resolutions first: a second one of a callback fails the append before anything else is written.
        for (const chunk of chunksOf(resolutions, 500)) {
          const inserted = yield* run(connection, statements.insertResolutions(chunk.length), chunk.flat())
          if (inserted.length < chunk.length) {
            const left: Array<string> = inserted.map((row) => row.callback_id)
            for (const [callbackId] of chunk) {
              const i = left.indexOf(callbackId as string)
              if (i === -1) return yield* new ResolutionConflict({ treeId, callbackId: callbackId as string })
              left.splice(i, 1)
            }
          }
        }
        for (const chunk of chunksOf(rows, 500)) {
          yield* run(connection, statements.insertEvents(chunk.length), chunk.flatMap(Statements.eventRow))
        }
        // A session already filed (under another tree) keeps its tree: only the ones filed here are remembered.
        const filed: Array<string> = []
        const sessionRows = Array.from(sessions, ([session, seq]) => [session, treeId, seq])
        for (const chunk of chunksOf(sessionRows, 500)) {
          const inserted = yield* run(connection, statements.insertSessions(chunk.length), chunk.flat())
          for (const row of inserted) filed.push(row.session_id)
        }
        for (const chunk of chunksOf(callbacks, 500)) {
          yield* run(connection, statements.insertCallbacks(chunk.length), chunk.flat())
        }
        return filed
      })

    const runCreateTree = (connection: Connection, write: Extract<Write, { _tag: "CreateTree" }>) =>
      Effect.gen(function*() {
        const { agent, created_at, tree_id, version } = write.row
        yield* run(connection, statements.insertTree, [tree_id, version, agent, created_at, 0])
        yield* run(connection, statements.insertRootSession, [tree_id, tree_id, null])
        return [tree_id] as ReadonlyArray<string>
      })

    const runWrite = (connection: Connection, write: Write): Effect.Effect<ReadonlyArray<string>, AppendError> => {
      const effect: Effect.Effect<ReadonlyArray<string>, AppendError | SqlError> = write._tag === "Append"
        ? runAppend(connection, write)
        : runCreateTree(connection, write)
      return effect.pipe(
        Effect.catchTag(
          "SqlError",
          (error) =>
            Effect.fail(
              write._tag === "Append"
                ? storeError("append", `could not append to tree ${write.treeId}`)(error)
                : storeError("createTree", `could not create tree ${write.tree.treeId}`)(error)
            )
        )
      )
    }

    // -------------------------------------------------------------------------
    // Group commit: the writers
    // -------------------------------------------------------------------------

    const queue = yield* Queue.unbounded<Write>()
    const maxBatch = Math.max(1, options.maxBatch ?? 256)
    let closed = false

    /**
     * Durable points are synced: a batch with a `"sync"` append is on disk when its transaction commits (SQLite:
     * `synchronous=FULL` for that commit, which syncs the write-ahead log and every relaxed commit before it;
     * PostgreSQL: `synchronous_commit` as configured). A batch of relaxed appends only is committed without waiting for
     * the disk (SQLite: `synchronous=NORMAL`; PostgreSQL: `SET LOCAL synchronous_commit = off`).
     */
    const syncs = (writes: ReadonlyArray<Write>) =>
      options.synchronous !== "normal" && writes.some((write) => write._tag === "Append" && write.durability === "sync")
    let sqliteSynchronous = options.synchronous === "normal" ? "NORMAL" : "FULL"
    const setSqliteSynchronous = (wanted: "FULL" | "NORMAL") =>
      dialect !== "sqlite" || sqliteSynchronous === wanted
        ? Effect.void
        : Effect.zipRight(
          Effect.sync(() => sqliteSynchronous = wanted),
          Effect.catchAll(sql.unsafe(`PRAGMA synchronous = ${wanted}`), () => Effect.sync(() => sqliteSynchronous = ""))
        )

    const runBatch = (writes: ReadonlyArray<Write>) =>
      Effect.gen(function*() {
        const sync = syncs(writes)
        yield* setSqliteSynchronous(sync ? "FULL" : "NORMAL")
        if (sync) yield* Metric.increment(syncedCommits)
        // One lock order for every batch (by tree), so concurrent batches on PostgreSQL never deadlock.
        const ordered = [...writes].sort((a, b) => {
          const x = a._tag === "Append" ? a.treeId : a.tree.treeId
          const y = b._tag === "Append" ? b.treeId : b.tree.treeId
          return x < y ? -1 : x > y ? 1 : 0
        })
        // Optimistically without savepoints (conflicts are rare; each savepoint costs two statements): when a write
        // fails, the transaction rolls back and the others run again, each in its own savepoint this time.
        const attempt = (batch: ReadonlyArray<Write>, savepoints: boolean) =>
          transaction((connection) =>
            Effect.gen(function*() {
              if (!sync && dialect === "pg") yield* run(connection, "SET LOCAL synchronous_commit = off", [])
              const outcomes: Array<Either.Either<ReadonlyArray<string>, AppendError>> = []
              for (let i = 0; i < batch.length; i++) {
                if (savepoints) yield* run(connection, "SAVEPOINT parley_write", [])
                const outcome = yield* Effect.either(runWrite(connection, batch[i]))
                if (Either.isLeft(outcome) && !savepoints) return yield* new Rollback({ index: i, error: outcome.left })
                if (Either.isLeft(outcome)) yield* run(connection, "ROLLBACK TO SAVEPOINT parley_write", [])
                if (savepoints) yield* run(connection, "RELEASE SAVEPOINT parley_write", [])
                outcomes.push(outcome)
              }
              return outcomes
            })
          )
        const results = new Map<Write, Either.Either<ReadonlyArray<string>, AppendError>>()
        let failed: StoreError | undefined
        const first = yield* Effect.either(attempt(ordered, false))
        if (Either.isRight(first)) {
          ordered.forEach((write, i) => results.set(write, first.right[i]))
        } else if (first.left._tag === "Rollback") {
          const { error, index } = first.left
          results.set(ordered[index], Either.left(error))
          const rest = ordered.filter((_, i) => i !== index)
          const second = rest.length === 0 ? Either.right([]) : yield* Effect.either(attempt(rest, rest.length > 1))
          if (Either.isRight(second)) {
            rest.forEach((write, i) => results.set(write, second.right[i]))
          } else if (second.left._tag === "Rollback") {
            results.set(rest[second.left.index], Either.left(second.left.error))
          } else {
            failed = storeError("append", "the transaction failed")(second.left)
          }
        } else {
          failed = storeError("append", "the transaction failed")(first.left)
        }
        for (const write of ordered) {
          const result = results.get(write)
          if (result === undefined) {
            const error = failed ?? new StoreError({ method: "append", description: "the transaction failed" })
            yield* write._tag === "Append" ? Deferred.fail(write.done, error) : Deferred.fail(write.done, error)
            continue
          }
          if (Either.isLeft(result)) {
            const error = result.left
            yield* write._tag === "Append"
              ? Deferred.fail(write.done, error)
              : Deferred.fail(
                write.done,
                error._tag === "StoreError"
                  ? error
                  : new StoreError({ method: "createTree", description: error.message })
              )
            continue
          }
          const treeId = write._tag === "Append" ? write.treeId : write.tree.treeId
          for (const session of result.right) fileSession(session, treeId)
          if (write._tag === "CreateTree") {
            yield* Deferred.succeed(write.done, undefined)
            continue
          }
          // As in the memory store, this process's tails have the events when `append` returns, and the appender
          // goes on before the readers of those tails do: it is woken first (both are woken now and run once the
          // writer yields, in that order), so an engine has taken its own events in before a reader of its tails
          // asks it about them. `changes` comes after: the writer has then taken its append into account when
          // `changes` tells of it.
          remember(write.treeId, write.expectedSeq, write.events)
          yield* Deferred.succeed(write.done, undefined)
          fanout.appended(write.treeId, write.events)
          yield* PubSub.publish(changes, { treeId: write.treeId, nextSeq: write.expectedSeq + write.events.length })
        }
      })

    // Registered before the writers start, so it runs after they stop: what they did not take fails, typed.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        const pending = yield* Queue.takeAll(queue)
        const error = new StoreError({ method: "append", description: "the store was closed" })
        yield* Effect.forEach(
          pending,
          (write) => write._tag === "Append" ? Deferred.fail(write.done, error) : Deferred.fail(write.done, error),
          { discard: true }
        )
      })
    )

    const writer = Effect.gen(function*() {
      while (true) {
        const first = yield* Queue.take(queue)
        // Let the appends made concurrently with this one join its transaction.
        yield* Effect.yieldNow()
        const rest = yield* Queue.takeUpTo(queue, maxBatch - 1)
        const batch = [first, ...Chunk.toReadonlyArray(rest)]
        // A defect in a batch fails its writes (typed) and leaves the writer running.
        yield* Effect.uninterruptible(runBatch(batch)).pipe(
          Effect.catchAllCause((cause) => {
            const error = storeError("append", "the write failed")(cause)
            return Effect.forEach(
              batch,
              (write) => write._tag === "Append" ? Deferred.fail(write.done, error) : Deferred.fail(write.done, error),
              { discard: true }
            )
          })
        )
      }
    })
    const writers = dialect === "sqlite" ? 1 : Math.max(1, options.writers ?? 4)
    for (let i = 0; i < writers; i++) yield* Effect.forkScoped(writer)

    const write = <E>(make: (done: Deferred.Deferred<void, E>) => Write) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<void, E>()
        if (closed) return yield* new StoreError({ method: "append", description: "the store is closed" })
        yield* Queue.offer(queue, make(done))
        return yield* Deferred.await(done)
      })

    // -------------------------------------------------------------------------
    // Appends by others: SQLite polls, PostgreSQL listens
    // -------------------------------------------------------------------------

    if (dialect === "sqlite") {
      const following = yield* SqliteChanges.follow(sql, {
        instance,
        pollInterval: options.pollInterval === undefined
          ? undefined
          : Math.max(1, Math.round(Duration.toMillis(options.pollInterval))),
        watch: options.watch ?? true,
        onAppend: foreignAppend
      }).pipe(Effect.mapError(storeError("make", "could not read the change counter")))
      afterOwnWrite = following.afterOwnWrite
    } else if (Option.isSome(pg)) {
      // LISTEN tells of appends at once; each notification carries its change's number. The listening connection is
      // checked every `pollInterval` (our own ping must come back within a second, else LISTEN starts again on a new
      // connection), and then the changes numbered past the last one seen are read: none normally, the ones a lost
      // connection missed otherwise.
      const client = pg.value
      const interval = Math.max(10, Math.round(Duration.toMillis(options.pollInterval ?? "2 seconds")))
      let cursor = yield* sql<{ readonly id: number | string | null }>`SELECT MAX(change_id) AS id FROM parley_trees`
        .pipe(
          Effect.mapError(storeError("make", "could not read the change counter")),
          Effect.map((rows) => Number(rows[0]?.id ?? 0))
        )
      const catchUp: Effect.Effect<void, SqlError> = Effect.gen(function*() {
        while (true) {
          const rows = yield* sql<{
            readonly tree_id: string
            readonly next_seq: number | string
            readonly change_id: number | string
            readonly changed_by: string | null
          }>`SELECT tree_id, next_seq, change_id, changed_by FROM parley_trees
              WHERE change_id > ${cursor} ORDER BY change_id LIMIT 1000`
          for (const row of rows) {
            cursor = Math.max(cursor, Number(row.change_id))
            if (row.changed_by !== instance) yield* foreignAppend(row.tree_id as SessionId, Number(row.next_seq))
          }
          if (rows.length < 1000) return
        }
      })
      let pings = 0
      const pinged = new Map<string, Deferred.Deferred<void>>()
      /** Listens until the connection stops answering our pings. */
      const listenOnce = (started: Deferred.Deferred<void>) =>
        Effect.scoped(Effect.gen(function*() {
          yield* client.listen(channel).pipe(
            Stream.runForEach((payload) => {
              const [from, treeId, nextSeq, changeId] = payload.split(" ")
              if (treeId === "ping") {
                const heard = from === instance ? pinged.get(payload) : undefined
                return heard === undefined ? Effect.void : Effect.ignore(Deferred.succeed(heard, undefined))
              }
              if (changeId !== undefined) cursor = Math.max(cursor, Number(changeId))
              if (from === instance || nextSeq === undefined) return Effect.void
              return foreignAppend(treeId as SessionId, Number(nextSeq))
            }),
            Effect.forkScoped
          )
          /** Sends a ping until it comes back (true), every `every` ms, `times` times at most. */
          const ping = (every: number, times: number) =>
            Effect.gen(function*() {
              const payload = `${instance} ping ${++pings}`
              const heard = yield* Deferred.make<void>()
              pinged.set(payload, heard)
              for (let i = 0; i < times; i++) {
                yield* sql`SELECT pg_notify(${channel}, ${payload})`
                const back = yield* Effect.raceFirst(
                  Effect.as(Deferred.await(heard), true),
                  Effect.as(SqliteChanges.sleepLive(every), false)
                )
                if (back) return true
              }
              return false
            }).pipe(Effect.ensuring(Effect.sync(() => pinged.clear())))
          // LISTEN is in place once a first ping comes back (it may take a few tries: the stream starts it).
          if (!(yield* ping(20, 250))) return
          while (true) {
            const answered = yield* ping(1000, 1)
            if (!answered) return
            yield* Effect.ignore(Deferred.succeed(started, undefined))
            yield* catchUp
            yield* SqliteChanges.sleepLive(interval)
          }
        }))
      const started = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        while (true) {
          yield* listenOnce(started).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("SqlStore: LISTEN failed", cause))
          )
          yield* Effect.logWarning(`SqlStore: LISTEN ${channel} stopped answering; listening again`)
          yield* SqliteChanges.sleepLive(100)
        }
      }).pipe(Effect.forkScoped)
      // LISTEN is in place once our first ping comes back.
      const listening = yield* Effect.raceFirst(
        Effect.as(Deferred.await(started), true),
        Effect.as(SqliteChanges.sleepLive(5000), false)
      )
      if (!listening) {
        return yield* new StoreError({ method: "make", description: `LISTEN ${channel} did not start within 5 s` })
      }
    }

    // -------------------------------------------------------------------------
    // The service
    // -------------------------------------------------------------------------

    const service: Service = {
      createTree: (tree) =>
        Effect.flatMap(
          encodeTree(tree),
          (row) => write<StoreError>((done) => ({ _tag: "CreateTree", tree, row, done }))
        ),
      getTree,
      treeOf,
      append: (treeId, expectedSeq, events, lease, durability = "sync") =>
        Effect.gen(function*() {
          if (events.length === 0) return
          if (events.some((event, i) => event.seq !== expectedSeq + i)) {
            const actual = yield* nextSeqOf("append", treeId)
            if (Option.isNone(actual)) {
              return yield* new StoreError({ method: "append", description: `there is no tree ${treeId}` })
            }
            return yield* new SeqConflict({ treeId, expected: expectedSeq, actual: actual.value })
          }
          const rows = yield* Effect.forEach(events, (event) => encodeEvent("append", treeId, event))
          return yield* write<AppendError>((done) => ({
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
      read: (treeId, from) => readEvents("read", treeId, from),
      subscribe: (treeId, from, sessionId) => fanout.subscribe(treeId, from, sessionId),
      publish: (treeId, events) => Effect.sync(() => fanout.publish(treeId, events)),
      // Subscribed at once (no change is missed between the call and the first read), then moved into a mailbox.
      changes: Effect.flatMap(PubSub.subscribe(changes), (subscription) =>
        Mailbox.fromStream(Stream.fromQueue(subscription))),
      heartbeat: (owner, ttl) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          awaitingLock(
            "a heartbeat",
            sql`INSERT INTO parley_owners (owner_id, expires_at)
            VALUES (${owner}, ${now + Duration.toMillis(ttl)})
            ON CONFLICT (owner_id) DO UPDATE SET expires_at = excluded.expires_at`
          ).pipe(
            Effect.asVoid,
            Effect.mapError(storeError("heartbeat", `could not renew ${owner}`))
          )),
      retire: (owner) =>
        awaitingLock("retiring an owner", sql`DELETE FROM parley_owners WHERE owner_id = ${owner}`).pipe(
          Effect.asVoid,
          Effect.mapError(storeError("retire", `could not retire ${owner}`))
        ),
      claim: (treeId, owner) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          awaitingLock(
            "a claim",
            sql<{ readonly epoch: number | string }>`UPDATE parley_trees
            SET epoch = epoch + 1, owner = ${owner}
            WHERE tree_id = ${treeId} AND (owner IS NULL OR owner = ${owner} OR NOT EXISTS (
              SELECT 1 FROM parley_owners o WHERE o.owner_id = parley_trees.owner AND o.expires_at > ${now}))
            RETURNING epoch`
          ).pipe(
            Effect.map((rows) =>
              rows.length === 0 ? Option.none() : Option.some<Lease>({ owner, epoch: Number(rows[0].epoch) })
            ),
            Effect.mapError(storeError("claim", `could not claim tree ${treeId}`))
          )),
      unfinished: (owner) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          sql<{ readonly tree_id: string; readonly owner: string | null }>`SELECT tree_id, owner FROM parley_trees t
            WHERE open_turns > 0 AND paused = 0 AND (owner IS NULL OR owner = ${owner} OR NOT EXISTS (
              SELECT 1 FROM parley_owners o WHERE o.owner_id = t.owner AND o.expires_at > ${now}))
            ORDER BY created_at, tree_id`.pipe(
            Effect.map((rows) =>
              rows.map((row) => ({ treeId: row.tree_id as SessionId, owner: row.owner ?? undefined }))
            ),
            Effect.mapError(storeError("unfinished", "could not list the unfinished trees"))
          )),
      claimPaused: (owner, own) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // Its own trees only when asked (at start); another owner's once it lapsed.
          const claimable = own
            ? sql`owner IS NULL OR owner = ${owner} OR NOT EXISTS (
                SELECT 1 FROM parley_owners o WHERE o.owner_id = parley_trees.owner AND o.expires_at > ${now})`
            : sql`owner IS NULL OR (owner <> ${owner} AND NOT EXISTS (
                SELECT 1 FROM parley_owners o WHERE o.owner_id = parley_trees.owner AND o.expires_at > ${now}))`
          const claimed = yield* awaitingLock(
            "claiming paused trees",
            sql<{ readonly tree_id: string; readonly epoch: number | string }>`UPDATE parley_trees
              SET epoch = epoch + 1, owner = ${owner}
              WHERE open_turns > 0 AND paused = 1 AND (${claimable})
              RETURNING tree_id, epoch`
          )
          const trees = claimed.map((row) => ({
            treeId: row.tree_id as SessionId,
            lease: { owner, epoch: Number(row.epoch) }
          }))
          const deadlines: Array<{ treeId: SessionId; callbackId: CallbackId; expiresAt: number }> = []
          for (
            const chunk of chunksOf(
              trees.map((tree) =>
                tree.treeId
              ),
              500
            )
          ) {
            const rows = yield* sql<{
              readonly tree_id: string
              readonly callback_id: string
              readonly expires_at: number | string
            }>`SELECT c.tree_id, c.callback_id, c.expires_at FROM parley_callbacks c
              WHERE c.tree_id IN ${sql.in(chunk)} AND c.expires_at IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id)`
            for (const row of rows) {
              deadlines.push({
                treeId: row.tree_id as SessionId,
                callbackId: row.callback_id as CallbackId,
                expiresAt: Number(row.expires_at)
              })
            }
          }
          return { trees, deadlines }
        }).pipe(Effect.mapError(storeError("claimPaused", `could not claim the paused trees for ${owner}`))),
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
