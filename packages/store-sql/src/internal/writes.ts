/**
 * The store's writes (appends and new trees), by group commit: a queue drained by writer fibers (one on SQLite, which
 * has one writer; a few on PostgreSQL), each taking every pending write and running them in ONE transaction. When one
 * of them fails (a conflict), the transaction rolls back and the others run again, each in its own SAVEPOINT, so a
 * conflict fails only its own append. An append is a compare-and-set of its tree's `next_seq`
 * (`UPDATE … WHERE next_seq = expected`), so a lost race is a `SeqConflict` whatever the process; a resolution is an
 * `INSERT … ON CONFLICT DO NOTHING` into a table keyed by callback id, so a second one inserts nothing and is a
 * `ResolutionConflict`.
 */
import type { SessionId } from "@parley/core/Ids"
import type { AppendRows, StoredTree } from "@parley/log/EventLog"
import { LeaseLost, ResolutionConflict, SeqConflict, StoreError } from "@parley/log/StoreError"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type { Connection } from "effect/sql/SqlConnection"
import type { SqlError } from "effect/sql/SqlError"
import type { EventRow, TreeRow } from "./codec.js"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"
import type { Reads } from "./reads.js"
import * as Statements from "./statements.js"

/** Commits the SQL stores synced to disk (durable points; group commit shares one between appends). */
export const syncedCommits = Metric.counter("parley_store_synced_commits", {
  description: "transactions of the SQL store committed with a sync to disk (durable points)"
})

export type AppendError = SeqConflict | ResolutionConflict | LeaseLost | StoreError

export type Write =
  | {
    readonly _tag: "Append"
    /** The append as the event log hands it: its events and what they add to the indexes. */
    readonly append: AppendRows
    /** Its events, encoded. */
    readonly rows: ReadonlyArray<EventRow>
    readonly done: Deferred.Deferred<void, AppendError>
  }
  | {
    readonly _tag: "CreateTree"
    readonly tree: StoredTree
    readonly row: TreeRow
    readonly done: Deferred.Deferred<void, StoreError>
  }

/**
 * Waits while other fibers are still bringing writes: a commit on SQLite blocks the process, so nothing can join a
 * transaction while it runs, and a writer that went on at once would commit one write at a time while every other
 * tree waits its turn (a convoy). Effect 4 resumes fibers in scheduler rounds (one `setImmediate` each), and an
 * engine's next append comes a few rounds after its last one returned: the writer yields a round at a time, and stops
 * once `quietRounds` rounds in a row brought no write (or the batch is full). Only when trees take turns: the writes of
 * one tree come one after another anyway (its actor batches its commands), and its next write should not wait for
 * unrelated work. When nothing else runs, this costs `quietRounds` empty rounds (microseconds, against a commit's sync).
 */
const quietRounds = 3
const whileWritesArrive = <A>(queue: Queue.Queue<A>, room: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    let quiet = 0
    let size = Queue.sizeUnsafe(queue)
    while (quiet < quietRounds && size < room) {
      yield* Effect.yieldNow
      const now = Queue.sizeUnsafe(queue)
      quiet = now > size ? 0 : quiet + 1
      size = now
    }
  })

const treeOf = (write: Write): SessionId => write._tag === "Append" ? write.append.treeId : write.tree.treeId

/** Fails a transaction run without savepoints when one of its writes failed, so it rolls back. */
class Rollback extends Data.TaggedError("Rollback")<{ readonly index: number; readonly error: AppendError }> {}

/** The statements of one write, inside its batch's transaction. */
const writeOne = (database: Database, reads: Reads, channel: string) => {
  const { dialect, instance } = database
  const statements = Statements.make(dialect)
  const placeholder = dialect === "sqlite" ? "?" : "$1"
  const run = (connection: Connection, text: string, params: ReadonlyArray<unknown>) =>
    connection.execute(text, params, undefined)

  const runAppend = (connection: Connection, write: Extract<Write, { _tag: "Append" }>) =>
    Effect.gen(function*() {
      const { rows } = write
      const { events, expectedSeq, fence: lease, openTurns, treeId } = write.append
      const nextSeq = expectedSeq + events.length
      const fence = lease === undefined ? [] : [lease.owner, lease.epoch]
      const paused = write.append.paused ? 1 : 0
      const cas = [nextSeq, openTurns, paused, instance, treeId, expectedSeq, ...fence]
      const moved = yield* run(
        connection,
        lease === undefined ? statements.casNextSeq : statements.casNextSeqFenced,
        dialect === "sqlite" ? cas : [...cas, channel, `${instance} ${treeId} ${nextSeq}`]
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
      const resolutions = write.append.resolved.map(({ callbackId, resolution, seq }) =>
        [callbackId, treeId, seq, resolution] as ReadonlyArray<unknown>
      )
      const callbacks = write.append.opened.map((row) =>
        [row.callbackId, treeId, row.sessionId, row.turnId, row.kind, row.seq, row.expiresAt ?? null] as ReadonlyArray<
          unknown
        >
      )
      // Resolutions first: a second one of a callback fails the append before anything else is written.
      for (const chunk of Statements.chunksOf(resolutions)) {
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
      for (const chunk of Statements.chunksOf(rows)) {
        yield* run(connection, statements.insertEvents(chunk.length), chunk.flatMap(Statements.eventRow))
      }
      // The webhook outbox's entries, in the transaction of the events they report.
      const reported = write.append.reported.map(({ kind, seq }) => [treeId, seq, kind] as ReadonlyArray<unknown>)
      for (const chunk of Statements.chunksOf(reported)) {
        yield* run(connection, statements.insertOutbox(chunk.length), chunk.flat())
      }
      // A session already filed (under another tree) keeps its tree: only the ones filed here are remembered.
      const filed: Array<string> = []
      const sessionRows = write.append.sessions.flatMap(({ sessionId, seq }) =>
        reads.isFiled(sessionId) ? [] : [[sessionId, treeId, seq]]
      )
      for (const chunk of Statements.chunksOf(sessionRows)) {
        const inserted = yield* run(connection, statements.insertSessions(chunk.length), chunk.flat())
        for (const row of inserted) filed.push(row.session_id)
      }
      for (const chunk of Statements.chunksOf(callbacks)) {
        yield* run(connection, statements.insertCallbacks(chunk.length), chunk.flat())
      }
      // After the callbacks: one opened and resolved in this append is marked too.
      for (const chunk of Statements.chunksOf(write.append.resolved)) {
        yield* run(connection, statements.markResolved(chunk.length), chunk.map(({ callbackId }) => callbackId))
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
      Effect.catchTag("SqlError", (error) =>
        Effect.fail(
          write._tag === "Append"
            ? storeError("append", `could not append to tree ${write.append.treeId}`)(error)
            : storeError("createTree", `could not create tree ${write.tree.treeId}`)(error)
        ))
    )
  }

  return { run, runWrite }
}

export interface Writers {
  /** Queues a write and waits for its batch's commit; then gives `result`. */
  readonly write: <E, A>(
    make: (done: Deferred.Deferred<void, E>) => Write,
    result: A
  ) => Effect.Effect<A, E | StoreError>
}

/**
 * Starts the writers in the scope. An append's writer remembers its events (`Reads.remember`) once its batch
 * committed, then tells the appender (the event log then hands them to its subscribers).
 */
export const start = (
  database: Database,
  reads: Reads,
  channel: string
): Effect.Effect<Writers, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { dialect, options, transaction } = database
    const { run, runWrite } = writeOne(database, reads, channel)
    const queue = yield* Queue.unbounded<Write>()
    const maxBatch = Math.max(1, options.maxBatch ?? 256)
    let closed = false

    /**
     * Durable points are synced: a batch with a `"sync"` append is on disk when its transaction commits (SQLite:
     * `synchronous=FULL` for that commit, which syncs the write-ahead log and every relaxed commit before it;
     * PostgreSQL: `synchronous_commit` as configured). A batch of relaxed appends only is committed without waiting
     * for the disk (SQLite: `synchronous=NORMAL`; PostgreSQL: `SET LOCAL synchronous_commit = off`).
     */
    const syncs = (writes: ReadonlyArray<Write>) =>
      options.synchronous !== "normal" &&
      writes.some((write) => write._tag === "Append" && write.append.durability === "sync")
    const fail = (write: Write, error: StoreError) =>
      write._tag === "Append" ? Deferred.fail(write.done, error) : Deferred.fail(write.done, error)

    const runBatch = (writes: ReadonlyArray<Write>) =>
      Effect.gen(function*() {
        const sync = syncs(writes)
        if (sync) yield* Metric.update(syncedCommits, 1)
        // One lock order for every batch (by tree), so concurrent batches on PostgreSQL never deadlock.
        const ordered = [...writes].sort((a, b) => {
          const x = treeOf(a)
          const y = treeOf(b)
          return x < y ? -1 : x > y ? 1 : 0
        })
        // Optimistically without savepoints (conflicts are rare; each savepoint costs two statements): when a write
        // fails, the transaction rolls back and the others run again, each in its own savepoint this time.
        const attempt = (batch: ReadonlyArray<Write>, savepoints: boolean) =>
          transaction(
            (connection) =>
              Effect.gen(function*() {
                const outcomes: Array<Result.Result<ReadonlyArray<string>, AppendError>> = []
                for (let i = 0; i < batch.length; i++) {
                  if (savepoints) yield* run(connection, "SAVEPOINT parley_write", [])
                  const outcome = yield* Effect.result(runWrite(connection, batch[i]))
                  if (Result.isFailure(outcome) && !savepoints) {
                    return yield* new Rollback({ index: i, error: outcome.failure })
                  }
                  if (Result.isFailure(outcome)) yield* run(connection, "ROLLBACK TO SAVEPOINT parley_write", [])
                  if (savepoints) yield* run(connection, "RELEASE SAVEPOINT parley_write", [])
                  outcomes.push(outcome)
                }
                return outcomes
              }),
            // The database sets how the commit waits for the disk (SQLite's `synchronous` before `BEGIN`, PostgreSQL's
            // `synchronous_commit` inside).
            { synced: sync }
          )
        const results = new Map<Write, Result.Result<ReadonlyArray<string>, AppendError>>()
        let failed: StoreError | undefined
        const first = yield* Effect.result(attempt(ordered, false))
        if (Result.isSuccess(first)) {
          ordered.forEach((write, i) => results.set(write, first.success[i]))
        } else if (first.failure._tag === "Rollback") {
          const { error, index } = first.failure
          results.set(ordered[index], Result.fail(error))
          const rest = ordered.filter((_, i) => i !== index)
          const second = rest.length === 0 ? Result.succeed([]) : yield* Effect.result(attempt(rest, rest.length > 1))
          if (Result.isSuccess(second)) {
            rest.forEach((write, i) => results.set(write, second.success[i]))
          } else if (second.failure._tag === "Rollback") {
            results.set(rest[second.failure.index], Result.fail(second.failure.error))
          } else {
            failed = storeError("append", "the transaction failed")(second.failure)
          }
        } else {
          failed = storeError("append", "the transaction failed")(first.failure)
        }
        for (const write of ordered) {
          const result = results.get(write)
          if (result === undefined) {
            yield* fail(write, failed ?? new StoreError({ method: "append", description: "the transaction failed" }))
            continue
          }
          if (Result.isFailure(result)) {
            const error = result.failure
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
          const treeId = treeOf(write)
          for (const session of result.success) reads.fileSession(session, treeId)
          if (write._tag === "CreateTree") {
            yield* Deferred.succeed(write.done, undefined)
            continue
          }
          // The appender hands the events to this process's subscribers (`EventLog`) once it is told.
          reads.remember(write.append.treeId, write.append.expectedSeq, write.append.events)
          yield* Deferred.succeed(write.done, undefined)
        }
      })

    // Registered before the writers start, so it runs after they stop: what they did not take fails, typed.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        const pending = yield* Queue.clear(queue)
        const error = new StoreError({ method: "append", description: "the store was closed" })
        yield* Effect.forEach(pending, (write) => fail(write, error), { discard: true })
      })
    )

    /** The tree of the last write committed: a write of another tree means trees are taking turns. */
    let lastTree: string | undefined
    const writer = Effect.gen(function*() {
      while (true) {
        const first = yield* Queue.take(queue)
        // Let the appends other trees make meanwhile join its transaction.
        yield* treeOf(first) === lastTree ? Effect.yieldNow : whileWritesArrive(queue, maxBatch - 1)
        // (`takeBetween` with a minimum of 0 takes nothing: what is there is taken from a minimum of 1.)
        const rest = Queue.sizeUnsafe(queue) === 0 || maxBatch === 1
          ? []
          : yield* Queue.takeBetween(queue, 1, maxBatch - 1)
        const batch = [first, ...rest]
        lastTree = treeOf(batch[batch.length - 1])
        // A defect in a batch fails its writes (typed) and leaves the writer running.
        yield* Effect.uninterruptible(runBatch(batch)).pipe(
          Effect.catchCause((cause) => {
            const error = storeError("append", "the write failed")(cause)
            return Effect.forEach(batch, (write) => fail(write, error), { discard: true })
          })
        )
      }
    })
    const writers = dialect === "sqlite" ? 1 : Math.max(1, options.writers ?? 4)
    for (let i = 0; i < writers; i++) yield* Effect.forkScoped(writer)

    return {
      write: <E, A>(make: (done: Deferred.Deferred<void, E>) => Write, result: A) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<void, E>()
          if (closed) return yield* new StoreError({ method: "append", description: "the store is closed" })
          yield* Queue.offer(queue, make(done))
          yield* Deferred.await(done)
          return result
        })
    }
  })
