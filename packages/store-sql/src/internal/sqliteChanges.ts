/**
 * SQLite: noticing the appends of other processes (and of other store instances on the same file).
 *
 * - The source of truth is a poll of `parley_trees.change_id` (an indexed, store-wide counter each append bumps),
 *   gated by `PRAGMA data_version`, which changes only when *another* connection committed: a poll after nothing or
 *   after this store's own commits costs one pragma.
 * - The fast path: an `fs.watch` (inotify on Linux) of the database's folder, filtered to the database file and its
 *   write-ahead log (`<file>-wal`). A commit writes the log, so the watch fires and the poll runs at once. Watching the
 *   folder rather than the files survives the log being created later, truncated or deleted by a checkpoint, with
 *   nothing to re-arm.
 * - The log is written *before* the commit is visible (the writer then fsyncs and publishes it in the shared-memory
 *   index, which no watch sees): when the poll after an event finds nothing new, it looks again a few times over the
 *   next ~250 ms (1 ms apart at first), until the commit shows; a new such event starts those looks again from the
 *   first. Unless the event is this store's own: the store notes the size and modification time of the file and its
 *   log after each of its write transactions (`afterOwnWrite`), and an event that finds them as noted is its own.
 *   (File times are coarse — a few milliseconds — but another writer's commit also grows the log, except right after
 *   the log restarted; a commit missed that way waits for the next event or the periodic poll.)
 * - The periodic poll stays, as the fallback: every `pollInterval` (default 250 ms with a watch, 25 ms without one —
 *   no file, `watch: false`, or a watch that fails to start or errors later).
 *
 * Events are coalesced (one pending wake-up) and one fiber runs every poll, so polls never overlap. The
 * watch lives in the scope: closed with the store.
 */
import type { SessionId } from "@parley/core/Ids"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as fs from "node:fs"
import * as path from "node:path"

export interface Options {
  /** This store's mark in `parley_trees.changed_by`: its own appends are skipped. */
  readonly instance: string
  /** The poll's period as asked (ms); the default depends on whether the watch runs. */
  readonly pollInterval: number | undefined
  /** Whether to watch the file (default: yes). */
  readonly watch: boolean
  /** A foreign append was noticed. */
  readonly onAppend: (treeId: SessionId, nextSeq: number) => Effect.Effect<void>
}

/** The poll's period with a working watch (the fallback) and without one. */
export const watchedInterval = 250
export const unwatchedInterval = 25

/** After an event nothing explains yet: when to look again (ms after the previous look); ~250 ms in all. */
const retryDelays: ReadonlyArray<number> = [1, 1, 1, 1, 1, 2, 4, 8, 16, 32, 64, 128]

/** Sleeps on the wall clock, whatever `Clock` the store was built under (polls must run under `TestClock` too). */
export const sleepLive = (millis: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * The poll loop's wake-ups: `wake` (from the watch's callback) wakes the loop at once, or its next wait if none runs
 * (wake-ups coalesce); `next(millis)` waits for one, or for `millis` on the wall clock (`false`). One timer and no
 * fiber per wait: the loop waits after each of the store's own commits too (the watch sees them).
 */
const wakeupSignal = () => {
  let pending = false
  let waiting: (() => void) | undefined
  return {
    wake: () => {
      if (waiting !== undefined) waiting()
      else pending = true
    },
    next: (millis: number): Effect.Effect<boolean> =>
      Effect.callback<boolean>((resume) => {
        if (pending) {
          pending = false
          return resume(Effect.succeed(true))
        }
        const timer = setTimeout(() => {
          waiting = undefined
          resume(Effect.succeed(false))
        }, millis)
        waiting = () => {
          waiting = undefined
          clearTimeout(timer)
          resume(Effect.succeed(true))
        }
        return Effect.sync(() => {
          waiting = undefined
          clearTimeout(timer)
        })
      })
  }
}

interface ChangeRow {
  readonly tree_id: string
  readonly next_seq: number
  readonly change_id: number
  readonly changed_by: string | null
}

/**
 * Starts following: reads the current position (so only later appends are reported), then forks the poll loop and
 * opens the watch, both in the scope.
 */
export const follow = (
  sql: SqlClient.SqlClient,
  options: Options
): Effect.Effect<{ readonly afterOwnWrite: () => void }, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataVersion = Effect.map(
      sql<{ readonly data_version: number }>`PRAGMA data_version`,
      (rows) => Number(rows[0]?.data_version ?? 0)
    )
    // The version first: a commit between the two reads changes it, and the next poll then looks.
    let version = yield* dataVersion
    let cursor = yield* Effect.map(
      sql<{ readonly id: number | null }>`SELECT MAX(change_id) AS id FROM parley_trees`,
      (rows) => Number(rows[0]?.id ?? 0)
    )

    /** Reports every append after `cursor`, by others. */
    const drain = Effect.gen(function*() {
      while (true) {
        const rows = yield* sql<ChangeRow>`SELECT tree_id, next_seq, change_id, changed_by FROM parley_trees
          WHERE change_id > ${cursor} ORDER BY change_id LIMIT 1000`
        for (const row of rows) {
          cursor = Math.max(cursor, Number(row.change_id))
          if (row.changed_by !== options.instance) {
            yield* options.onAppend(row.tree_id as SessionId, Number(row.next_seq))
          }
        }
        if (rows.length < 1000) return
      }
    })

    /** Whether another connection committed since the last look; if so, reports its appends. */
    const poll: Effect.Effect<boolean, SqlError> = Effect.gen(function*() {
      const now = yield* dataVersion
      if (now === version) return false
      version = now
      yield* drain
      return true
    })

    const wakeups = wakeupSignal()
    const file = yield* Effect.map(
      sql<{ readonly name: string; readonly file: string | null }>`PRAGMA database_list`,
      (rows) => rows.find((row) => row.name === "main")?.file ?? ""
    )
    const watched = options.watch && file !== ""

    /** The size and modification time of the file and its log (empty when not watched). */
    const stamp = (): string => {
      if (!watched) return ""
      const parts: Array<string> = []
      for (const name of [file, `${file}-wal`]) {
        try {
          const stats = fs.statSync(name, { bigint: true, throwIfNoEntry: false })
          parts.push(stats === undefined ? "-" : `${stats.size}@${stats.mtimeNs}`)
        } catch {
          parts.push("?")
        }
      }
      return parts.join(" ")
    }
    /** The files as this store last left them, or last found others' appends in them. */
    let seen = stamp()

    /**
     * After a watch event, a look: it found appends of others, or nothing because the event is this store's own
     * (the files are as it left them), or nothing yet (a commit of someone else may still be on its way: look again
     * shortly).
     */
    const afterEvent: Effect.Effect<"found" | "own" | "pending", SqlError> = Effect.gen(function*() {
      const before = stamp()
      // Polled even when the files are as this store's last commit left them: another writer may have committed just
      // before that commit, whose stamp then covers both.
      const found = yield* poll
      if (found) seen = before
      return found ? "found" : before === seen ? "own" : "pending"
    })

    /** A look after the first: as `poll`, noting the files when it finds appends. */
    const pollAgain = Effect.gen(function*() {
      const before = stamp()
      const found = yield* poll
      if (found) seen = before
      return found
    })

    /** A failed poll is logged, and counts as a look that found nothing. */
    const logged = <A>(effect: Effect.Effect<A, SqlError>, otherwise: A) =>
      Effect.catchCause(
        effect,
        (cause) =>
          Effect.as(Effect.logWarning("SqlStore: the poll for other processes' appends failed", cause), otherwise)
      )

    let watching = false
    if (watched) {
      const directory = path.dirname(file)
      const names = new Set([path.basename(file), `${path.basename(file)}-wal`])
      const watcher = yield* Effect.acquireRelease(
        Effect.sync(() => {
          try {
            return fs.watch(directory, { persistent: false }, (_event, name) => {
              if (name === null || names.has(String(name))) wakeups.wake()
            })
          } catch {
            return undefined
          }
        }),
        (watcher) => Effect.sync(() => watcher?.close())
      )
      if (watcher !== undefined) {
        watching = true
        watcher.on("error", () => {
          // The watch is gone (its folder was removed, inotify failed): the poll takes over at its fast period.
          watching = false
          watcher.close()
          wakeups.wake()
        })
      } else {
        yield* Effect.logWarning(`SqlStore: cannot watch ${directory}; polling every ${unwatchedInterval} ms`)
      }
    }

    const interval = () => options.pollInterval ?? (watching ? watchedInterval : unwatchedInterval)
    yield* Effect.gen(function*() {
      // The looks still due after an event nothing explained yet; a new event starts again from the first.
      let retries: ReadonlyArray<number> = []
      while (true) {
        const woken = yield* wakeups.next(retries[0] ?? interval())
        if (woken) {
          const outcome = yield* logged(afterEvent, "pending" as const)
          // Our own commit explains this event, not one that an earlier event announced: its looks stay due.
          if (outcome !== "own") retries = outcome === "found" ? [] : retryDelays
        } else {
          retries = retries.slice(1)
          if (yield* logged(pollAgain, false)) retries = []
        }
      }
    }).pipe(Effect.forkScoped)
    return {
      afterOwnWrite: () => {
        seen = stamp()
      }
    }
  })
