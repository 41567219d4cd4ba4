/**
 * The RSS row: many turns paused in one process. `main.ts` runs this file in a child process (so the parent's own
 * heap does not count) with `--count=N --budget=S`; it pauses up to N turns (ScriptedModel, no approval handler:
 * each turn stays `Blocked` on its approval), stops early after S seconds, and prints one JSON line on stdout:
 * `{ "asked", "paused", "seconds", "rssBefore", "rss", "heapUsed" }` (bytes; `rss` after a forced GC).
 *
 * `runChild` is the parent's side.
 */
import { Cause, Console, Data, Effect, Exit, Option, Schema } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { scripted } from "./models.js"
import { heapAfterGc, pauseMany, runtime } from "./phases.js"
import { Ledger, makeAgent } from "./workload.js"

export const ChildResult = Schema.parseJson(Schema.Struct({
  asked: Schema.Number,
  paused: Schema.Number,
  seconds: Schema.Number,
  rssBefore: Schema.Number,
  rss: Schema.Number,
  heapUsed: Schema.Number
}))

export type ChildResult = typeof ChildResult.Type

/** The child process failed or printed no result. */
export class ChildFailed extends Data.TaggedError("ChildFailed")<{ readonly detail: string }> {
  override get message(): string {
    return `the paused-turns child process failed: ${this.detail}`
  }
}

const flag = (name: string, fallback: number) =>
  Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback)

const child = Effect.gen(function*() {
  const count = flag("count", 100_000)
  const budget = flag("budget", 180)
  const ledger = new Ledger()
  const agent = makeAgent(ledger)
  const model = yield* scripted.make(ledger)
  return yield* Effect.gen(function*() {
    yield* heapAfterGc
    const rssBefore = process.memoryUsage().rss
    const { paused, ...pause } = yield* pauseMany({ agent, ledger, phase: "paused (RSS)", count, budget })
    const heapUsed = yield* heapAfterGc
    const result: ChildResult = {
      ...pause,
      paused: paused.length,
      rssBefore,
      rss: process.memoryUsage().rss,
      heapUsed: Option.getOrElse(heapUsed, () => process.memoryUsage().heapUsed)
    }
    yield* Console.log(JSON.stringify(result))
  }).pipe(Effect.provide(runtime(model)))
})

const entry = fileURLToPath(import.meta.url)

/** Runs this file in a child process (same Node flags as this one), its progress on our stderr. */
export const runChild = (count: number, budget: number): Effect.Effect<ChildResult, ChildFailed> =>
  Effect.async<string, ChildFailed>((resume) => {
    const process_ = spawn(
      process.execPath,
      [...process.execArgv, entry, `--count=${count}`, `--budget=${budget}`],
      { stdio: ["ignore", "pipe", "inherit"] }
    )
    let output = ""
    process_.stdout.on("data", (data: Buffer) => {
      output += data.toString()
    })
    process_.on("error", (error) => resume(Effect.fail(new ChildFailed({ detail: error.message }))))
    process_.on("close", (code, signal) =>
      resume(
        code === 0
          ? Effect.succeed(output.trim().split("\n").at(-1) ?? "")
          : Effect.fail(new ChildFailed({ detail: `exit code ${code ?? "none"}, signal ${signal ?? "none"}` }))
      ))
    return Effect.sync(() => process_.kill())
  }).pipe(
    Effect.flatMap((line) =>
      Effect.mapError(
        Schema.decodeUnknown(ChildResult)(line),
        () => new ChildFailed({ detail: `unexpected output ${JSON.stringify(line)}` })
      )
    )
  )

if (process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  Effect.runPromiseExit(child).then((exit) => {
    if (Exit.isFailure(exit)) {
      console.error(Cause.pretty(exit.cause))
      process.exitCode = 1
    }
  })
}
