/**
 * Runner processes for the kill test: `fixtures/runnerProcess.ts` run by this Node.js from the packages' sources,
 * with one JSON argument and an IPC channel; killed (`SIGKILL`) when the scope closes if it still runs.
 */
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"

const repoDir = path.resolve(import.meta.dirname, "..", "..", "..")

export interface Runner {
  readonly pid: number
  /** Sends the signal (`SIGKILL`: dead at once; `SIGTERM`: it drains), and waits for the exit. */
  readonly kill: (signal: "SIGKILL" | "SIGTERM") => Effect.Effect<void>
  readonly output: () => string
}

/** Starts a runner process and waits (60 s at most) until it says it serves. */
export const spawnRunner = (args: {
  readonly url: string
  readonly port: number
  readonly ledger: string
}): Effect.Effect<Runner, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<void, Error>()
    const exited = yield* Deferred.make<void>()
    let output = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = ChildProcess.spawn(
          process.execPath,
          [
            "--conditions=@parley/source",
            "--import",
            "tsx",
            path.join(import.meta.dirname, "fixtures", "runnerProcess.ts"),
            JSON.stringify(args)
          ],
          { cwd: repoDir, stdio: ["ignore", "pipe", "pipe", "ipc"], env: { ...process.env, NODE_OPTIONS: "" } }
        )
        child.stdout?.on("data", (chunk) => void (output += String(chunk)))
        child.stderr?.on("data", (chunk) => void (output += String(chunk)))
        child.on("message", (message: { readonly _tag: string; readonly message?: string }) => {
          if (message._tag === "Ready") Deferred.unsafeDone(ready, Effect.void)
          else Deferred.unsafeDone(ready, Effect.fail(new Error(`the runner failed: ${message.message}\n${output}`)))
        })
        child.on("exit", (code, signal) => {
          Deferred.unsafeDone(ready, Effect.fail(new Error(`the runner exited (${code ?? signal})\n${output}`)))
          Deferred.unsafeDone(exited, Effect.void)
        })
        return child
      }),
      (child) =>
        Effect.suspend(() => {
          if (child.exitCode !== null || child.signalCode !== null) return Effect.void
          child.kill("SIGKILL")
          return Deferred.await(exited)
        })
    )
    yield* Deferred.await(ready).pipe(
      Effect.timeoutFail({
        duration: "60 seconds",
        onTimeout: () => new Error(`the runner never got ready\n${output}`)
      })
    )
    return {
      pid: child.pid ?? -1,
      kill: (signal) =>
        Effect.suspend(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
          return Deferred.await(exited)
        }),
      output: () => output
    }
  })
