/**
 * Runner processes for the multi-process tests: `fixtures/runnerProcess.ts` run by this Node.js from the packages'
 * sources, with one JSON argument and an IPC channel; killed (`SIGKILL`) when the scope closes if it still runs.
 */
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"

const repoDir = path.resolve(import.meta.dirname, "..", "..", "..")

export interface Runner {
  readonly pid: number
  /** Its runner address's port. */
  readonly port: number
  /** The base URL of its HTTP API (a runner started with `http`). */
  readonly url: string | undefined
  /** Sends the signal (`SIGKILL`: dead at once; `SIGTERM`: it drains), and waits for the exit. */
  readonly kill: (signal: "SIGKILL" | "SIGTERM") => Effect.Effect<void>
  readonly output: () => string
}

/**
 * Starts a runner process and waits (60 s at most) until it says it serves. Its tool runs take `took` milliseconds
 * (2 s by default); with `http` it is a `ClusterServer` too.
 */
export const spawnRunner = (args: {
  readonly url: string
  readonly port: number
  readonly ledger: string
  readonly took?: number | undefined
  readonly http?: boolean | undefined
}): Effect.Effect<Runner, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const ready = yield* Deferred.make<string | undefined, Error>()
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
        child.on("message", (message: { readonly _tag: string; readonly message?: string; readonly url?: string }) => {
          if (message._tag === "Ready") Deferred.doneUnsafe(ready, Effect.succeed(message.url))
          else Deferred.doneUnsafe(ready, Effect.fail(new Error(`the runner failed: ${message.message}\n${output}`)))
        })
        child.on("exit", (code, signal) => {
          Deferred.doneUnsafe(ready, Effect.fail(new Error(`the runner exited (${code ?? signal})\n${output}`)))
          Deferred.doneUnsafe(exited, Effect.void)
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
    const url = yield* Deferred.await(ready).pipe(
      Effect.timeoutOrElse({
        duration: "60 seconds",
        orElse: () => Effect.fail(new Error(`the runner never got ready\n${output}`))
      })
    )
    return {
      pid: child.pid ?? -1,
      port: args.port,
      url,
      kill: (signal) =>
        Effect.suspend(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
          return Deferred.await(exited)
        }),
      output: () => output
    }
  })
