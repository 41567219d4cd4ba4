/**
 * Waiting for another process's write lock on a SQLite file.
 *
 * better-sqlite3 waits for a lock by blocking the thread (`busy_timeout`), which would stall every fiber of the
 * process, so the store opens its file with a busy timeout of 0 and waits here instead: it tries again with backoff (a
 * `Schedule`, on the wall clock whatever `Clock` the store was built under), logs once why it waits, and after
 * `lockTimeout` fails with a `StoreError` naming the lock and the file.
 */
import { StoreError } from "@parley/log/StoreError"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { messageOf } from "./errors.js"

/** How long opening a store waits for a write lock by default. */
export const defaultLockTimeout: Duration.DurationInput = "15 seconds"

/** SQLITE_BUSY / SQLITE_LOCKED, as better-sqlite3 reports them. */
export const isLocked = (error: unknown): boolean =>
  /database is locked|database table is locked|busy/i.test(messageOf(error))

export interface WaitOptions {
  /** What the store opens: a file name, or `undefined` for a `SqlClient` the program built. */
  readonly filename?: string | undefined
  readonly lockTimeout?: Duration.DurationInput | undefined
  /** The public constructor that opens the store, for the error: `layerSqlite`, `make`. */
  readonly method: string
  /** What waits, for the log and the error: "opening the store". */
  readonly what: string
  /** The option that bounds the wait, for the error (default `lockTimeout`). */
  readonly timeoutOption?: string | undefined
  /** Log once that it waits (default true; the store's writes wait quietly: contention between processes is normal). */
  readonly warn?: boolean | undefined
  /** The longest pause between two tries (default 250 ms; the store's writes try again every 20 ms at most). */
  readonly maxDelay?: Duration.DurationInput | undefined
}

/**
 * Runs `effect` (which fails at once when the database is locked) until it gets past the lock: again after 5 ms,
 * 10 ms, … at most every 250 ms, for `lockTimeout` at most. Other failures are not retried.
 */
export const waitForLock = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: WaitOptions
): Effect.Effect<A, StoreError, R> => {
  const timeout = Duration.decode(options.lockTimeout ?? defaultLockTimeout)
  const file = options.filename === undefined ? "the SQLite database" : options.filename
  const schedule = Schedule.exponential("5 millis").pipe(
    Schedule.union(Schedule.spaced(options.maxDelay ?? "250 millis")),
    Schedule.upTo(timeout),
    Schedule.whileInput((error: E) => isLocked(error)),
    Schedule.zipRight(Schedule.count),
    Schedule.tapOutput((attempt) =>
      attempt === 0 && options.warn !== false
        ? Effect.logWarning(
          `SqlStore.${options.method}: ${file} is locked by another process (it holds the write lock); ` +
            `${options.what} waits for it, up to ${Duration.format(timeout)}`
        )
        : Effect.void
    )
  )
  return effect.pipe(
    Effect.retry(schedule),
    Effect.withClock(Clock.make()),
    Effect.catchAllCause((cause) =>
      Effect.fail(
        isLocked(cause)
          ? new StoreError({
            module: "SqlStore",
            method: options.method,
            description: `${file} is locked: another process held its write lock for longer than ` +
              `${Duration.format(timeout)} (${
                options.timeoutOption ?? "lockTimeout"
              }) while ${options.what} waited for it`,
            cause: Cause.squash(cause)
          })
          : new StoreError({
            module: "SqlStore",
            method: options.method,
            description: `${options.what} failed on ${file}: ${messageOf(cause)}`,
            cause: Cause.squash(cause)
          })
      )
    )
  )
}
