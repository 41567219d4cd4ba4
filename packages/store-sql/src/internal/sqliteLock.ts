/**
 * Waiting for another process's write lock on a SQLite file.
 *
 * A SQLite driver waits for a lock by blocking the thread (`busy_timeout`: `node:sqlite` is synchronous), which would
 * stall every fiber of the process, so the store opens its file with a busy timeout of 10 ms at most and waits here
 * instead: it tries again with backoff (on the wall clock, whatever `Clock` the store was built under), logs once why
 * it waits, and after `lockTimeout` fails with a `StoreError` naming the lock and the file.
 */
import { StoreError } from "@parley/log/StoreError"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { isSqlError } from "effect/sql/SqlError"
import { messageOf } from "./errors.js"
import { sleepLive } from "./sqliteChanges.js"

/** How long opening a store waits for a write lock by default. */
export const defaultLockTimeout: Duration.Input = "15 seconds"

/**
 * SQLITE_BUSY / SQLITE_LOCKED: an `SqlError` whose reason is a `LockTimeoutError` (`node:sqlite`'s errcode 5 or 6),
 * or an error that says so (another driver's), found in a `Cause` or under an error's `cause`.
 */
export const isLocked = (error: unknown): boolean => {
  for (let depth = 0; depth < 8 && typeof error === "object" && error !== null; depth++) {
    if (Cause.isCause(error)) {
      return error.reasons.some((reason) =>
        reason._tag === "Fail" ? isLocked(reason.error) : reason._tag === "Die" ? isLocked(reason.defect) : false
      )
    }
    if (isSqlError(error) && error.reason._tag === "LockTimeoutError") return true
    if (/database is locked|database table is locked|busy/i.test(messageOf(error))) return true
    error = "cause" in error ? error.cause : undefined
  }
  return false
}

export interface WaitOptions {
  /** What the store opens: a file name, or `undefined` for a `SqlClient` the program built. */
  readonly filename?: string | undefined
  readonly lockTimeout?: Duration.Input | undefined
  /** The public constructor that opens the store, for the error: `layerSqlite`, `make`. */
  readonly method: string
  /** What waits, for the log and the error: "opening the store". */
  readonly what: string
  /** The option that bounds the wait, for the error (default `lockTimeout`). */
  readonly timeoutOption?: string | undefined
  /** Log once that it waits (default true; the store's writes wait quietly: contention between processes is normal). */
  readonly warn?: boolean | undefined
  /** The longest pause between two tries (default 250 ms; the store's writes try again every 20 ms at most). */
  readonly maxDelay?: Duration.Input | undefined
}

/**
 * Runs `effect` (which fails at once when the database is locked) until it gets past the lock: again after 5 ms,
 * 10 ms, … at most every 250 ms, for `lockTimeout` at most. Other failures are not retried; an interruption stays one.
 */
export const waitForLock = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: WaitOptions
): Effect.Effect<A, StoreError, R> =>
  Effect.gen(function*() {
    const timeout = Duration.fromInputUnsafe(options.lockTimeout ?? defaultLockTimeout)
    const timeoutMillis = Duration.toMillis(timeout)
    const maxDelay = Duration.toMillis(options.maxDelay ?? "250 millis")
    const file = options.filename === undefined ? "the SQLite database" : options.filename
    const started = performance.now()
    for (let attempt = 0;; attempt++) {
      const exit = yield* Effect.exit(effect)
      if (Exit.isSuccess(exit)) return exit.value
      const cause = exit.cause
      if (Cause.hasInterrupts(cause) && !Cause.hasFails(cause)) {
        return yield* Effect.failCause(cause as Cause.Cause<never>)
      }
      const locked = isLocked(cause)
      const left = timeoutMillis - (performance.now() - started)
      if (!locked || left <= 0) {
        return yield* new StoreError({
          module: "SqlStore",
          method: options.method,
          description: locked
            ? `${file} is locked: another process held its write lock for longer than ` +
              `${Duration.format(timeout)} (${
                options.timeoutOption ?? "lockTimeout"
              }) while ${options.what} waited for it`
            : `${options.what} failed on ${file}: ${messageOf(cause)}`,
          cause: Cause.squash(cause)
        })
      }
      if (attempt === 0 && options.warn !== false) {
        yield* Effect.logWarning(
          `SqlStore.${options.method}: ${file} is locked by another process (it holds the write lock); ` +
            `${options.what} waits for it, up to ${Duration.format(timeout)}`
        )
      }
      yield* sleepLive(Math.max(1, Math.min(5 * 2 ** attempt, maxDelay, left)))
    }
  })
