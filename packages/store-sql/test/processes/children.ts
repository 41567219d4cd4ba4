/**
 * Child processes for the process tests: a fixture entry (`test/fixtures/*Process.ts`) run by this Node.js, from the
 * packages' sources (`--conditions=@parley/source --import tsx`), with one JSON argument and an IPC channel. The
 * child is killed (`SIGKILL`) when the scope closes, if it still runs.
 */
import type { Scope } from "effect"
import { Data, Deferred, Duration, Effect, Queue } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"

const repoDir = path.resolve(import.meta.dirname, "..", "..", "..", "..")
const fixtures = path.resolve(import.meta.dirname, "..", "fixtures")

export class ChildFailed extends Data.TaggedError("ChildFailed")<{ readonly message: string }> {}

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Child<M extends { readonly _tag: string }> {
  readonly name: string
  readonly pid: number
  readonly messages: Queue.Dequeue<M>
  readonly send: (message: { readonly _tag: string }) => Effect.Effect<void>
  /** `kill -9`. */
  readonly kill: Effect.Effect<void>
  /** Sends a signal (`SIGSTOP` pauses the process as a long GC pause or a frozen VM would, `SIGCONT` resumes it). */
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  readonly exit: Effect.Effect<Exit>
  /** What it printed so far (stdout and stderr), for diagnostics. */
  readonly output: () => string
}

/** Starts `fixtures/<entry>` with `args`. */
export const spawn = <M extends { readonly _tag: string }>(
  name: string,
  entry: string,
  args: unknown
): Effect.Effect<Child<M>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const messages = yield* Queue.unbounded<M>()
    const exited = yield* Deferred.make<Exit>()
    let output = ""
    const process_ = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = ChildProcess.spawn(
          process.execPath,
          ["--conditions=@parley/source", "--import", "tsx", path.join(fixtures, entry), JSON.stringify(args)],
          { cwd: repoDir, stdio: ["ignore", "pipe", "pipe", "ipc"], env: { ...process.env, NODE_OPTIONS: "" } }
        )
        child.stdout?.on("data", (chunk) => void (output += String(chunk)))
        child.stderr?.on("data", (chunk) => void (output += String(chunk)))
        child.on("message", (message) => Queue.offerUnsafe(messages, message as M))
        child.on("exit", (code, signal) => Deferred.doneUnsafe(exited, Effect.succeed({ code, signal })))
        return child
      }),
      (child) =>
        Effect.suspend(() => {
          if (child.exitCode !== null || child.signalCode !== null) return Effect.void
          child.kill("SIGCONT")
          child.kill("SIGKILL")
          return Effect.asVoid(Deferred.await(exited))
        })
    )
    return {
      name,
      pid: process_.pid ?? -1,
      messages,
      send: (message) =>
        Effect.callback<void>((resume) => {
          if (!process_.connected) return resume(Effect.void)
          process_.send(message, (error) => resume(error === null ? Effect.void : Effect.die(error)))
        }),
      signal: (signal) => Effect.sync(() => void process_.kill(signal)),
      kill: Effect.suspend(() => {
        if (process_.exitCode === null && process_.signalCode === null) process_.kill("SIGKILL")
        return Effect.asVoid(Deferred.await(exited))
      }),
      exit: Deferred.await(exited),
      output: () => output
    }
  })

/**
 * The child's next message of this tag (the others go to `onOther`); fails when the child reports a failure, exits
 * first, or nothing comes within `timeout`.
 */
export const expect = <M extends { readonly _tag: string }, Tag extends M["_tag"]>(
  child: Child<M>,
  tag: Tag,
  options?: {
    readonly timeout?: Duration.Input | undefined
    readonly onOther?: ((message: M) => Effect.Effect<void, ChildFailed>) | undefined
  }
): Effect.Effect<Extract<M, { readonly _tag: Tag }>, ChildFailed> => {
  const failed = (why: string) =>
    new ChildFailed({ message: `${child.name} (pid ${child.pid}): ${why}\n--- its output ---\n${child.output()}` })
  const next: Effect.Effect<Extract<M, { readonly _tag: Tag }>, ChildFailed> = Effect.gen(function*() {
    while (true) {
      const message = yield* Queue.take(child.messages)
      if (message._tag === tag) return message as Extract<M, { readonly _tag: Tag }>
      if (message._tag === "Failed") {
        return yield* failed(`failed: ${(message as unknown as { readonly message: string }).message}`)
      }
      if (options?.onOther !== undefined) yield* options.onOther(message)
    }
  })
  const exitedFirst = Effect.flatMap(
    child.exit,
    (exit) => Effect.sleep("200 millis").pipe(Effect.andThen(failed(`exited (${exit.code ?? exit.signal}) first`)))
  )
  return Effect.raceFirst(next, exitedFirst).pipe(
    Effect.timeoutOrElse({
      duration: options?.timeout ?? Duration.seconds(60),
      orElse: () =>
        Effect.fail(
          failed(
            `no ${tag} message within ${Duration.format(Duration.fromInputUnsafe(options?.timeout ?? "60 seconds"))}`
          )
        )
    })
  )
}
