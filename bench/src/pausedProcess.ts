/**
 * The RSS rows: many turns paused in one process. `main.ts` runs this file in a child process (so the parent's own
 * heap does not count) with `--count=N --budget=S [--store=memory|sqlite] [--concurrency=C] [--resume]`; it pauses up
 * to N turns (ScriptedModel, no approval handler: each turn stays `Blocked` on its approval), C at a time (default 1),
 * stops starting new ones after S seconds, and prints one JSON line on stdout:
 * `{ "asked", "paused", "seconds", "rssBefore", "rss", "heapUsed", … }` (bytes; `rss` after a forced GC).
 *
 * - `--store=memory` (default): `SessionStore.layerMemory`.
 * - `--store=sqlite`: `@parley/store-sql` on a new SQLite file (removed at the end), `synchronous=FULL`.
 * - `--resume`: then answers every paused turn by id and waits for it to complete (C at a time, each checked as in
 *   `workload.ts`), within S seconds more; adds `resumed`, `resumeSeconds` and `maxRss` (the process's peak RSS).
 * - `--restart` (with `--resume`, SQLite): the engine that paused them stops first, and a new one on the same file
 *   resumes them; adds `restartClaimed` and `restartSeconds` (the paused trees it claimed at start, and when).
 *
 * `runChild` is the parent's side.
 */
import { Agent, Answer, Session, Turn } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { Cause, Console, Data, Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { scripted } from "./models.js"
import { heapAfterGc, pauseMany, runtime } from "./phases.js"
import * as Stores from "./stores.js"
import { checkCompleted, checkLedgerEmpty, Ledger, makeAgent } from "./workload.js"

export const ChildResult = Schema.fromJsonString(Schema.Struct({
  asked: Schema.Number,
  paused: Schema.Number,
  seconds: Schema.Number,
  rssBefore: Schema.Number,
  rss: Schema.Number,
  heapUsed: Schema.Number,
  resumed: Schema.optional(Schema.Number),
  resumeSeconds: Schema.optional(Schema.Number),
  maxRss: Schema.optional(Schema.Number),
  /** With `--restart`: the paused trees the new engine claimed at start, and how long after it began. */
  restartClaimed: Schema.optional(Schema.Number),
  restartSeconds: Schema.optional(Schema.Number)
}))

export type ChildResult = typeof ChildResult.Type

export type ChildStore = "memory" | "sqlite"

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
  const concurrency = Math.max(1, flag("concurrency", 1))
  const store = process.argv.includes("--store=sqlite") ? Stores.sqlite() : Stores.memory
  const resume = process.argv.includes("--resume")
  const restart = process.argv.includes("--restart")
  const phase = `paused (RSS, ${store.name})`
  const ledger = new Ledger()
  const agent = makeAgent(ledger)
  const model = yield* scripted.make(ledger)
  const database = yield* store.open
  // The first engine lives in a scope of its own: with `--restart` it stops before the second starts.
  const firstScope = yield* Scope.make()
  // Closed at the end in every case (early with `--restart`): an engine left running keeps the process alive.
  yield* Effect.addFinalizer(() => Scope.close(firstScope, Exit.void))
  const first = yield* Layer.buildWithScope(runtime(model, database.layer), firstScope)
  const { paused, result } = yield* Effect.gen(function*() {
    yield* heapAfterGc
    const rssBefore = process.memoryUsage().rss
    const { paused, ...pause } = yield* pauseMany({ agent, ledger, phase, count, budget, concurrency })
    const heapUsed = yield* heapAfterGc
    const rss = process.memoryUsage().rss
    const result: ChildResult = {
      ...pause,
      paused: paused.length,
      rssBefore,
      rss,
      heapUsed: Option.getOrElse(heapUsed, () => process.memoryUsage().heapUsed)
    }
    return { paused, result }
  }).pipe(Effect.provide(first))
  if (!resume) return yield* Console.log(JSON.stringify(result))
  if (restart) yield* Scope.close(firstScope, Exit.void)
  // With `--restart`, the first engine stops and a new one takes the paused trees up at start: the time until it has claimed them (without loading them) is measured at its store.
  const restarted = { claimed: 0, at: 0 }
  const restartedAt = performance.now()
  const watched = Layer.effectContext(
    Effect.map(SessionStore.services, (inner) =>
      SessionStore.context({
        ...inner,
        leases: {
          ...inner.leases,
          claimPaused: (owner, own) =>
            Effect.tap(inner.leases.claimPaused(owner, own), ({ trees }) =>
              Effect.sync(() => {
                if (restarted.at !== 0) return
                restarted.at = performance.now()
                restarted.claimed = trees.length
              }))
        }
      }))
  ).pipe(Layer.provide(database.layer))
  return yield* Effect.gen(function*() {
    let resumed = 0
    const started = performance.now()
    yield* Effect.forEach(paused, ({ approval, blocked }) =>
      Effect.gen(function*() {
        if (performance.now() - started > budget * 1000) return
        const session = yield* Agent.session(agent, blocked.sessionId)
        const turn = yield* Session.turn(session, blocked.turnId)
        ledger.approval(session.id)
        yield* Turn.answer(turn, approval.id, new Answer.AllowApproval())
        yield* checkCompleted(ledger, phase, session, yield* Turn.result(turn, { after: blocked }))
        resumed++
        if (resumed % 10_000 === 0) {
          yield* Console.error(`  ${phase}: resumed ${resumed}/${paused.length}`)
        }
      }), { concurrency, discard: true })
    const resumeSeconds = (performance.now() - started) / 1000
    if (resumed === paused.length) yield* checkLedgerEmpty(ledger, phase)
    yield* Console.log(JSON.stringify(
      {
        ...result,
        resumed,
        resumeSeconds,
        maxRss: process.resourceUsage().maxRSS * 1024,
        ...(restart ? { restartClaimed: restarted.claimed, restartSeconds: (restarted.at - restartedAt) / 1000 } : {})
      } satisfies ChildResult
    ))
  }).pipe(Effect.provide(restart ? yield* Layer.build(runtime(model, watched)) : first))
}).pipe(Effect.scoped)

const entry = fileURLToPath(import.meta.url)

/** Runs this file in a child process (same Node flags as this one), its progress on our stderr. */
export const runChild = (
  count: number,
  budget: number,
  options: {
    readonly store?: ChildStore
    readonly concurrency?: number
    readonly resume?: boolean
    /** Resume in a new engine on the same store (SQLite only: a memory store ends with its engine). */
    readonly restart?: boolean
  } = {}
): Effect.Effect<ChildResult, ChildFailed> =>
  Effect.callback<string, ChildFailed>((resume) => {
    const process_ = spawn(
      process.execPath,
      [
        ...process.execArgv,
        entry,
        `--count=${count}`,
        `--budget=${budget}`,
        `--store=${options.store ?? "memory"}`,
        `--concurrency=${options.concurrency ?? 1}`,
        ...(options.resume === true ? ["--resume"] : []),
        ...(options.restart === true ? ["--restart"] : [])
      ],
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
        Schema.decodeUnknownEffect(ChildResult)(line),
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
