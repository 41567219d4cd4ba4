import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { SqliteClient } from "@parley/store-sql"
import { SqlStore } from "@parley/store-sql"
import * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
import type { Duration } from "effect"
import { Context, DateTime, Deferred, Effect, Exit, Layer, Metric, Queue, Redacted, Scope, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pgDatabase, pgSchema, sqliteDatabase, sqliteFile, storeOf } from "./databases.js"

SessionStoreSuite.suite("SqlStore.layerSqlite", sqliteDatabase(), { canCorrupt: true })

SessionStoreSuite.suite("SqlStore.layerPg", pgDatabase(), { canCorrupt: true })

const treeId = Ids.SessionId.make("ses_sql")
const at = DateTime.makeUnsafe(0)
const queued = (seq: number) =>
  new TurnEvent.TurnQueued({ sessionId: treeId, turnId: Ids.TurnId.make("turn_sql"), seq, at, input: "hi" })
const create = (store: SessionStore.Services) =>
  store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })

/** The store and the client it runs on (to look at the database underneath). */
const withClient = <E>(client: Layer.Layer<SqlClient.SqlClient, E>, options?: SqlStore.Options) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Layer.provideMerge(SqlStore.layer(options), client))
    return { store: SessionStore.get(context), sql: Context.get(context, SqlClient.SqlClient) }
  })

/** The test's own metrics (the store's writer, built inside it, counts there): other tests run at the same time. */
const ownMetrics = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, Metric.MetricRegistry, new Map())

describe("SqlStore on SQLite", () => {
  it.effect("a file opens in WAL mode with synchronous=FULL (or NORMAL on request) and a short busy timeout", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { sql } = yield* withClient(SqliteClient.layer({ filename }))
      assert.deepStrictEqual(yield* sql`PRAGMA journal_mode`, [{ journal_mode: "wal" }])
      assert.deepStrictEqual(yield* sql`PRAGMA synchronous`, [{ synchronous: 2 }])
      // The thread blocks 10 ms at most: a longer wait for the lock is asynchronous (busyTimeout, tested below).
      assert.deepStrictEqual(yield* sql`PRAGMA busy_timeout`, [{ timeout: 10 }])
      const normal = yield* withClient(SqliteClient.layer({ filename }), {
        synchronous: "normal",
        busyTimeout: "5 millis"
      })
      assert.deepStrictEqual(yield* normal.sql`PRAGMA synchronous`, [{ synchronous: 1 }])
      assert.deepStrictEqual(yield* normal.sql`PRAGMA busy_timeout`, [{ timeout: 5 }])
    }))

  it.effect("an append says how many bytes it wrote: its rows' JSON text, in UTF-8", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename }))
      yield* create(store)
      const written = yield* store.eventLog.append(treeId, 0, [
        queued(0),
        new TurnEvent.TurnQueued({
          sessionId: treeId,
          turnId: Ids.TurnId.make("turn_sql"),
          seq: 1,
          at,
          input: "héllo ✓"
        })
      ])
      const [stored] = yield* sql<{ readonly bytes: number }>`SELECT SUM(LENGTH(CAST(event AS BLOB))) AS bytes
        FROM parley_events WHERE tree_id = ${treeId}`
      assert.strictEqual(written.bytes, stored.bytes)
    }))

  it.effect("durable points: a sync append commits with synchronous=FULL, a relaxed one with NORMAL; both visible", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename }))
      const other = yield* storeOf(SqlStore.layerSqlite({ filename }))
      const synced = Effect.map(Metric.value(SqlStore.syncedCommits), (state) => state.count)
      yield* create(store)
      const before = yield* synced
      yield* store.eventLog.append(treeId, 0, [queued(0)], undefined, "relaxed")
      assert.deepStrictEqual(yield* sql`PRAGMA synchronous`, [{ synchronous: 1 }])
      assert.strictEqual(yield* synced, before)
      // Committed and visible to another process's store at once, before any sync.
      assert.deepStrictEqual((yield* other.eventLog.read(treeId, 0)).map((event) => event.seq), [0])
      yield* store.eventLog.append(treeId, 1, [queued(1)], undefined, "sync")
      assert.deepStrictEqual(yield* sql`PRAGMA synchronous`, [{ synchronous: 2 }])
      assert.strictEqual(yield* synced, before + 1)
      // The default is sync.
      yield* store.eventLog.append(treeId, 2, [queued(2)])
      assert.strictEqual(yield* synced, before + 2)
    }).pipe(ownMetrics))

  it.effect("an active tree's latest events are served from memory; a paused tree's are not kept", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename }))
      /** What a new tail from 0 hands out at once (the table's rows are gone: only memory can have them). */
      const tail = Effect.scoped(Effect.flatMap(store.eventLog.subscribe(treeId, 0), (mailbox) =>
        Effect.raceFirst(
          Effect.map(Queue.takeAll(mailbox), (events) => Array.from(events, (event) => event._tag)),
          Effect.as(Effect.repeat(Effect.yieldNow, { times: 50 }), [] as Array<string>)
        )))
      yield* create(store)
      yield* store.eventLog.append(treeId, 0, [queued(0)])
      yield* sql`DELETE FROM parley_events`
      assert.deepStrictEqual(yield* tail, ["TurnQueued"])
      const blocked = new TurnEvent.TurnBlocked({
        sessionId: treeId,
        turnId: Ids.TurnId.make("turn_sql"),
        seq: 1,
        at,
        callbackIds: []
      })
      yield* store.eventLog.append(treeId, 1, [blocked])
      yield* sql`DELETE FROM parley_events`
      assert.deepStrictEqual(yield* tail, [], "paused: nothing of the tree is kept in memory")
    }))

  it.effect("group commit: trees appending at once share transactions, even with work between their appends", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const { store } = yield* withClient(SqliteClient.layer({ filename }))
      const synced = Effect.map(Metric.value(SqlStore.syncedCommits), (state) => state.count)
      const trees = Array.from({ length: 32 }, (_, i) => Ids.SessionId.make(`ses_group_${i}`))
      const appends = 5
      yield* Effect.forEach(
        trees,
        (id) => store.eventLog.createTree({ treeId: id, agent: AgentSpec.make({ name: "a" }), createdAt: at }),
        {
          concurrency: "unbounded",
          discard: true
        }
      )
      const before = yield* synced
      // Each tree's next append comes some scheduler hops after its last one returned, more for some trees than for
      // others (as an engine's next steps do): a commit blocks the process, so the writer must wait for the others to
      // get there before it commits.
      yield* Effect.forEach(
        trees,
        (id, i) =>
          Effect.forEach(Array.from({ length: appends }, (_, seq) => seq), (seq) =>
            Effect.andThen(
              Effect.repeat(Effect.yieldNow, { times: 2 * i }),
              store.eventLog.append(id, seq, [
                new TurnEvent.TurnQueued({ sessionId: id, turnId: Ids.TurnId.make("turn_group"), seq, at, input: "hi" })
              ])
            ), { discard: true }),
        { concurrency: "unbounded", discard: true }
      )
      const commits = (yield* synced) - before
      // One writer taking one append at a time would commit 160 times.
      assert.isAtMost(commits, appends * 2)
      for (const id of trees) assert.strictEqual((yield* store.eventLog.read(id, 0)).length, appends)
    }).pipe(ownMetrics))

  it.effect("the tables: one row per event with its schema version; one resolution per callback by primary key", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename: yield* sqliteFile }))
      yield* create(store)
      yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
      const rows = yield* sql<{ seq: number; tag: string; version: number }>`
        SELECT seq, tag, version FROM parley_events WHERE tree_id = ${treeId} ORDER BY seq`
      assert.deepStrictEqual(rows, [
        { seq: 0, tag: "TurnQueued", version: TurnEvent.schemaVersion },
        { seq: 1, tag: "TurnQueued", version: TurnEvent.schemaVersion }
      ])
      assert.deepStrictEqual(yield* sql`SELECT next_seq FROM parley_trees WHERE tree_id = ${treeId}`, [{ next_seq: 2 }])
      yield* sql`INSERT INTO parley_callback_resolutions ${
        sql.insert({ callback_id: "cb_x", tree_id: treeId, seq: 5, resolution: "expired" })
      }`
      const second = yield* Effect.flip(
        sql`INSERT INTO parley_callback_resolutions ${
          sql.insert({ callback_id: "cb_x", tree_id: treeId, seq: 6, resolution: "answered" })
        }`
      )
      assert.strictEqual(second._tag, "SqlError")
      const migrations = yield* sql<{ migration_id: number }>`SELECT migration_id FROM parley_migrations`
      assert.deepStrictEqual(migrations.map((row) => row.migration_id), [1, 2, 3, 4, 5, 6, 7, 8])
    }))

  it.effect("snapshots: one row per tree in parley_snapshots, the latest", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename: yield* sqliteFile }))
      yield* create(store)
      yield* store.snapshots.save(treeId, { seq: 2, version: 1, state: "{\"a\":1}" })
      yield* store.snapshots.save(treeId, { seq: 5, version: 1, state: "{\"a\":2}" })
      yield* store.snapshots.save(treeId, { seq: 4, version: 1, state: "{\"a\":3}" })
      assert.deepStrictEqual(yield* sql`SELECT tree_id, seq, version, state FROM parley_snapshots`, [
        { tree_id: treeId, seq: 5, version: 1, state: "{\"a\":2}" }
      ])
    }))

  it.effect("stores opened at once on a new file migrate it once, and both work", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const [a, b] = yield* Effect.all([
        storeOf(SqlStore.layerSqlite({ filename })),
        storeOf(SqlStore.layerSqlite({ filename }))
      ], { concurrency: "unbounded" })
      yield* create(a)
      yield* b.eventLog.append(treeId, 0, [queued(0)])
      assert.deepStrictEqual((yield* a.eventLog.read(treeId, 0)).map((event) => event.seq), [0])
    }))

  it.effect("a file that cannot be opened fails the layer with a StoreError naming SqlStore.layerSqlite", () =>
    Effect.gen(function*() {
      const file = yield* sqliteFile
      fs.writeFileSync(file, "") // a file where the folder should be
      const error = yield* Effect.flip(storeOf(SqlStore.layerSqlite({ filename: `${file}/sessions.db` })))
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "SqlStore.layerSqlite: could not open")
    }))

  it.effect("the file's missing folders are created", () =>
    Effect.gen(function*() {
      const filename = path.join(path.dirname(yield* sqliteFile), "new", ".parley", "sessions.db")
      const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
      yield* create(store)
      assert.isTrue(fs.existsSync(filename))
    }))

  it.effect("a failing database is a StoreError for every method, never a defect", () =>
    Effect.gen(function*() {
      const { sql, store } = yield* withClient(SqliteClient.layer({ filename: yield* sqliteFile }))
      yield* create(store)
      yield* store.eventLog.append(treeId, 0, [queued(0)])
      yield* sql`DROP TABLE parley_events`
      yield* sql`DROP TABLE parley_sessions`
      const failures = [
        yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1)])),
        yield* Effect.flip(store.eventLog.read(treeId, 0)),
        yield* Effect.flip(store.eventLog.treeOf(Ids.SessionId.make("ses_other"))),
        yield* Effect.flip(
          store.eventLog.createTree({
            treeId: Ids.SessionId.make("ses_new"),
            agent: AgentSpec.make({ name: "b" }),
            createdAt: at
          })
        )
      ]
      assert.deepStrictEqual(failures.map((error) => error._tag), [
        "StoreError",
        "StoreError",
        "StoreError",
        "StoreError"
      ])
      // The failed append left the log's length alone.
      assert.deepStrictEqual(yield* sql`SELECT next_seq FROM parley_trees WHERE tree_id = ${treeId}`, [{ next_seq: 1 }])
    }))

  it.effect("a closed store fails appends with a StoreError", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const store = yield* Scope.provide(
        storeOf(SqlStore.layerSqlite({ filename: yield* Scope.provide(sqliteFile, scope) })),
        scope
      )
      yield* create(store)
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(store.eventLog.append(treeId, 0, [queued(0)]))
      assert.strictEqual(error._tag, "StoreError")
    }))
})

/** The changes `store` tells, each with the wall-clock time it came (ms, `performance.now()`). */
const changesOf = (store: SessionStore.Services) =>
  Effect.gen(function*() {
    const seen = yield* Queue.unbounded<{ readonly nextSeq: number; readonly at: number }>()
    yield* SessionStore.changes(store).pipe(
      Stream.runForEach((change) => Queue.offer(seen, { nextSeq: change.nextSeq, at: performance.now() })),
      Effect.forkScoped
    )
    yield* Effect.sleep("10 millis")
    return seen
  })

/** Waits for the change that brings the tree to `nextSeq`; fails after `limit`. */
const changeTo = (
  seen: Queue.Queue<{ readonly nextSeq: number; readonly at: number }>,
  nextSeq: number,
  limit: Duration.Input
) =>
  Effect.gen(function*() {
    while (true) {
      const change = yield* Queue.take(seen)
      if (change.nextSeq >= nextSeq) return change.at
    }
  }).pipe(
    Effect.timeoutOrElse({
      duration: limit,
      orElse: () => Effect.fail(new Error(`no change to ${nextSeq} within the limit`))
    })
  )

const repoDir = path.resolve(import.meta.dirname, "..", "..", "..")

/** Runs `fixtures/appendOnce.ts` in a child process; succeeds with the time it printed `appended`. */
const appendFromChild = (filename: string, seq: number) =>
  Effect.callback<number, Error>((resume) => {
    const child = spawn(
      process.execPath,
      [
        "--conditions=@parley/source",
        "--import",
        "tsx",
        path.join(import.meta.dirname, "fixtures", "appendOnce.ts"),
        filename,
        treeId,
        String(seq)
      ],
      { cwd: repoDir, stdio: ["ignore", "pipe", "pipe"] }
    )
    let appendedAt: number | undefined
    let stderr = ""
    child.stdout.on("data", (data: Buffer) => {
      if (appendedAt === undefined && data.toString().includes("appended")) appendedAt = performance.now()
    })
    child.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
    })
    child.on("close", (code) =>
      resume(
        code === 0 && appendedAt !== undefined
          ? Effect.succeed(appendedAt)
          : Effect.fail(new Error(`the child failed (exit code ${code}): ${stderr}`))
      ))
    return Effect.sync(() => child.kill())
  })

describe("SqlStore on SQLite: appends of other processes, noticed by the file watch", () => {
  // The poll runs every 10 s: a change within 2 s came from the watch.
  const slowPoll = { pollInterval: "10 seconds" } as const

  it.live("another store's appends reach changes at once, also after the log was truncated", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const a = yield* storeOf(SqlStore.layerSqlite({ filename, ...slowPoll }))
      const { sql, store: b } = yield* withClient(SqliteClient.layer({ filename }), slowPoll)
      yield* create(a)
      const seen = yield* changesOf(a)
      for (let seq = 0; seq < 5; seq++) {
        const started = performance.now()
        yield* b.eventLog.append(treeId, seq, [queued(seq)])
        const at = yield* changeTo(seen, seq + 1, "2 seconds")
        assert.isBelow(at - started, 2000)
        // A checkpoint that empties the write-ahead log (it starts again from nothing): the watch still sees it.
        if (seq === 2) yield* sql`PRAGMA wal_checkpoint(TRUNCATE)`
      }
    }))

  it.live("another store's commit just before one of its own is still noticed at once (the same stamp covers both)", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const a = yield* storeOf(SqlStore.layerSqlite({ filename, ...slowPoll }))
      const b = yield* storeOf(SqlStore.layerSqlite({ filename, watch: false, ...slowPoll }))
      const other = Ids.SessionId.make("ses_sql_other")
      yield* create(a)
      yield* a.eventLog.createTree({ treeId: other, agent: AgentSpec.make({ name: "b" }), createdAt: at })
      const foreign = yield* Deferred.make<number>()
      yield* SessionStore.changes(a).pipe(
        Stream.filter((change) => change.treeId === treeId),
        Stream.runForEach(() => Deferred.succeed(foreign, performance.now())),
        Effect.forkScoped
      )
      yield* Effect.sleep("10 millis")
      // B's commit, then A's own at once: no turn of the event loop between them, so the watch's events for both
      // come after A noted the files as its commit left them.
      const started = performance.now()
      yield* b.eventLog.append(treeId, 0, [queued(0)])
      yield* a.eventLog.append(other, 0, [
        new TurnEvent.TurnQueued({ sessionId: other, turnId: Ids.TurnId.make("turn_other"), seq: 0, at, input: "hi" })
      ])
      const noticed = yield* Deferred.await(foreign).pipe(
        Effect.timeoutOrElse({
          duration: "2 seconds",
          orElse: () => Effect.fail(new Error("B's append was not noticed in 2 s"))
        })
      )
      assert.isBelow(noticed - started, 2000)
    }))

  it.live("its own appends are told once, whatever the watch sees", () =>
    Effect.gen(function*() {
      const a = yield* storeOf(SqlStore.layerSqlite({ filename: yield* sqliteFile, ...slowPoll }))
      yield* create(a)
      const seen = yield* changesOf(a)
      yield* a.eventLog.append(treeId, 0, [queued(0)])
      yield* a.eventLog.append(treeId, 1, [queued(1)])
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual((yield* Queue.clear(seen)).map((c) => c.nextSeq), [1, 2])
    }))

  it.live("without the watch, the poll finds them (every 25 ms by default)", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const a = yield* storeOf(SqlStore.layerSqlite({ filename, watch: false }))
      const b = yield* storeOf(SqlStore.layerSqlite({ filename, watch: false }))
      yield* create(a)
      const seen = yield* changesOf(a)
      yield* b.eventLog.append(treeId, 0, [queued(0)])
      yield* changeTo(seen, 1, "2 seconds")
    }))

  it.live(
    "an append by a child process reaches changes within 2 s of its commit (the poll: every 10 s)",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const a = yield* storeOf(SqlStore.layerSqlite({ filename, ...slowPoll }))
        yield* create(a)
        const seen = yield* changesOf(a)
        const appendedAt = yield* appendFromChild(filename, 0)
        const at = yield* changeTo(seen, 1, "2 seconds")
        assert.isBelow(at - appendedAt, 2000)
      }),
    { timeout: 60_000 }
  )
})

/** Runs `fixtures/holdLock.mjs` (better-sqlite3 alone): holds the file's write lock for `millis`; succeeds once it is held. */
const lockFromChild = (filename: string, millis: number) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly child: ChildProcess; readonly released: Effect.Effect<void> }, Error>((resume) => {
      const child = spawn(process.execPath, [
        path.join(import.meta.dirname, "fixtures", "holdLock.mjs"),
        filename,
        `${millis}`
      ], {
        cwd: repoDir,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stderr = ""
      const exited = Effect.callback<void>((done) => {
        if (child.exitCode !== null) return done(Effect.void)
        child.on("close", () => done(Effect.void))
      })
      child.stdout.on("data", (data: Buffer) => {
        if (data.toString().includes("locked")) resume(Effect.succeed({ child, released: exited }))
      })
      child.stderr.on("data", (data: Buffer) => {
        stderr += data.toString()
      })
      child.on(
        "close",
        (code) => resume(Effect.fail(new Error(`the child exited (${code}) before locking: ${stderr}`)))
      )
    }),
    ({ child }) => Effect.sync(() => child.kill())
  )

describe("SqlStore on SQLite: a file another process holds locked", () => {
  it.live(
    "opening waits for the write lock (without blocking the process), then the store works",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        yield* lockFromChild(filename, 2000)
        const started = performance.now()
        // The process stays responsive while the store waits: a timer fiber keeps ticking.
        let ticks = 0
        yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep("50 millis"), Effect.sync(() => ticks++))))
        const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
        const waited = performance.now() - started
        assert.isAbove(waited, 1000)
        assert.isAbove(ticks, 10)
        yield* create(store)
        yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((event) => event.seq), [0, 1])
      }),
    { timeout: 30_000 }
  )

  it.live(
    "past lockTimeout, opening fails with a StoreError naming the lock and the file",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        yield* lockFromChild(filename, 5000)
        const started = performance.now()
        const error = yield* Effect.flip(storeOf(SqlStore.layerSqlite({ filename, lockTimeout: "500 millis" })))
        assert.isBelow(performance.now() - started, 5000) // not the default 15 s
        assert.strictEqual(error._tag, "StoreError")
        assert.strictEqual(error.module, "SqlStore")
        assert.include(
          error.message,
          `SqlStore.layerSqlite: ${filename} is locked: another process held its write lock`
        )
        assert.include(error.message, "(lockTimeout)")
      }),
    { timeout: 30_000 }
  )

  it.live(
    "an append waits for the lock without blocking the process, and goes through once it is released",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const store = yield* storeOf(SqlStore.layerSqlite({ filename }))
        yield* create(store)
        yield* lockFromChild(filename, 1500)
        let ticks = 0
        yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep("50 millis"), Effect.sync(() => ticks++))))
        const started = performance.now()
        yield* store.eventLog.append(treeId, 0, [queued(0)])
        assert.isAbove(performance.now() - started, 1000)
        // A busy wait inside the driver would freeze the timer for the whole wait (a tick at most); a loaded machine
        // runs fewer ticks than the 20 a second asks for, but not one or two.
        assert.isAtLeast(ticks, 5)
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((event) => event.seq), [0])
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a lock held by a stopped process (SIGSTOP): an append fails after busyTimeout naming the lock, changes nothing, " +
      "and goes through after SIGCONT",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const store = yield* storeOf(SqlStore.layerSqlite({ filename, busyTimeout: "400 millis" }))
        yield* create(store)
        // The child would let go after 1.5 s: stopped well before (a loaded machine may take a while to get here), it
        // holds the lock past them for as long as it stays stopped.
        const { child, released } = yield* lockFromChild(filename, 1_500)
        const locked = performance.now()
        child.kill("SIGSTOP")
        yield* Effect.sleep(Math.max(0, 1_600 - (performance.now() - locked)))
        const error = yield* Effect.flip(store.eventLog.append(treeId, 0, [queued(0)]))
        assert.strictEqual(error._tag, "StoreError")
        assert.include(error.message, `${filename} is locked: another process held its write lock`)
        assert.include(error.message, "(busyTimeout)")
        assert.deepStrictEqual(yield* store.eventLog.read(treeId, 0), [])
        child.kill("SIGCONT")
        yield* released
        yield* store.eventLog.append(treeId, 0, [queued(0)])
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((event) => event.seq), [0])
      }),
    { timeout: 30_000 }
  )
})

describe("SqlStore on PostgreSQL", () => {
  it.effect("the tables: one row per event with its schema version; one resolution per callback by primary key", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const { sql, store } = yield* withClient(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
      yield* create(store)
      yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
      const rows = yield* sql<{ seq: number; tag: string; version: number }>`
        SELECT seq, tag, version FROM parley_events WHERE tree_id = ${treeId} ORDER BY seq`
      assert.deepStrictEqual(rows, [
        { seq: 0, tag: "TurnQueued", version: TurnEvent.schemaVersion },
        { seq: 1, tag: "TurnQueued", version: TurnEvent.schemaVersion }
      ])
      yield* sql`INSERT INTO parley_callback_resolutions ${
        sql.insert({ callback_id: "cb_x", tree_id: treeId, seq: 5, resolution: "expired" })
      }`
      const second = yield* Effect.flip(
        sql`INSERT INTO parley_callback_resolutions ${
          sql.insert({ callback_id: "cb_x", tree_id: treeId, seq: 6, resolution: "answered" })
        }`
      )
      assert.strictEqual(second._tag, "SqlError")
    }))

  it.live("a lost LISTEN connection is noticed: the store listens again and reads the appends it missed", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const a = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 2, pollInterval: "50 millis" }))
      const b = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 2 }))
      const admin = yield* withClient(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
      yield* create(a)
      const seen: Array<number> = []
      yield* SessionStore.changes(a).pipe(
        Stream.runForEach((change) => Effect.sync(() => void seen.push(change.nextSeq))),
        Effect.forkScoped
      )
      // Every backend listening on this schema's channel dies (a's, and b's: both listen).
      const schema = new URL(url).searchParams.get("options")?.match(/search_path=([^\s&]+)/)?.[1] ?? ""
      const killed = yield* admin.sql<{ readonly killed: boolean }>`
        SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
        WHERE query = ${`LISTEN "parley_changes_${schema}"`}`
      assert.isAtLeast(killed.length, 1, "a LISTEN backend was found and killed")
      // b appends while a's listener is gone; a reads it once it listens again.
      yield* b.eventLog.append(treeId, 0, [queued(0)])
      yield* Effect.gen(function*() {
        while (!seen.includes(1)) yield* Effect.sleep("20 millis")
      }).pipe(
        Effect.timeoutOrElse({
          duration: "10 seconds",
          orElse: () => Effect.fail(new Error("a never heard of b's append"))
        })
      )
      // And it keeps hearing of new ones at once.
      yield* b.eventLog.append(treeId, 1, [queued(1)])
      yield* Effect.gen(function*() {
        while (!seen.includes(2)) yield* Effect.sleep("20 millis")
      }).pipe(
        Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.fail(new Error("a stopped hearing")) })
      )
    }))

  it.effect("stores opened at once on a new schema migrate it once, and both work", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const [a, b] = yield* Effect.all([
        storeOf(SqlStore.layerPg({ url, maxConnections: 2 })),
        storeOf(SqlStore.layerPg({ url, maxConnections: 2 }))
      ], { concurrency: "unbounded" })
      yield* create(a)
      yield* b.eventLog.append(treeId, 0, [queued(0)])
      assert.deepStrictEqual((yield* a.eventLog.read(treeId, 0)).map((event) => event.seq), [0])
    }))

  it.effect("an unreachable server fails the layer with a StoreError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(storeOf(SqlStore.layerPg({ url: "postgres://parley:parley@127.0.0.1:1/none" })))
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "could not open")
    }))

  it.effect("a SqlClient without the PgClient service is refused (LISTEN needs it)", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const client = Layer.effectContext(Effect.map(
        Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
        (context) => Context.make(SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
      ))
      const error = yield* Effect.flip(withClient(client))
      assert.strictEqual(error._tag, "StoreError")
    }))
})
