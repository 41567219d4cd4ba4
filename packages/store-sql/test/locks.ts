/**
 * Another process holding a SQLite file's write lock (`fixtures/holdLock.mjs`, `node:sqlite` alone), for the tests of
 * the lock wait: started on the Node that runs the tests (`process.execPath`), killed with the scope.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"

/** The child and an effect that waits for it to exit. */
export interface LockHolder {
  readonly child: ChildProcess
  readonly exited: Effect.Effect<void>
}

/**
 * Holds `filename`'s write lock for `millis` (or `"forever"`), having run `statements` inside its transaction;
 * succeeds once the lock is held.
 */
export const lockFromChild = (
  filename: string,
  millis: number | "forever",
  statements: ReadonlyArray<string> = []
) =>
  Effect.acquireRelease(
    Effect.callback<LockHolder, Error>((resume) => {
      const child = spawn(process.execPath, [
        path.join(import.meta.dirname, "fixtures", "holdLock.mjs"),
        filename,
        `${millis}`,
        ...statements
      ], { stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      const exited = Effect.callback<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done(Effect.void)
        child.on("close", () => done(Effect.void))
      })
      child.stdout.on("data", (data: Buffer) => {
        if (data.toString().includes("locked")) resume(Effect.succeed({ child, exited }))
      })
      child.stderr.on("data", (data: Buffer) => {
        stderr += data.toString()
      })
      child.on(
        "close",
        (code) => resume(Effect.fail(new Error(`the child exited (${code}) before locking: ${stderr}`)))
      )
    }),
    ({ child }) =>
      Effect.sync(() => {
        // A stopped child would not take its SIGTERM until it continues.
        child.kill("SIGCONT")
        child.kill()
      })
  )
