/**
 * The runtime steps and fibers a turn of the approval loop costs: every operation Effect's fiber runtime evaluates
 * and every fiber it runs, per turn, and which fibers run them. Unlike a time, the count does not move with the
 * machine's load: it is the measure to compare two versions of the engine by (the CPU a turn takes follows it).
 *
 * ```sh
 * node --conditions=@parley/source --import tsx bench/src/steps.ts            # memory and SQLite, variants A and B
 * node --conditions=@parley/source --import tsx bench/src/steps.ts sqlite B 300 --fibers
 * ```
 *
 * Arguments: store (`memory`, `sqlite`, or both by default), variant (`A`, `B`, or both), turns (300), and
 * `--fibers` for the fibers of a turn by kind (named by the first function of Parley's code their first operation
 * carries, when there is one). The engine runs with its default options and `ScriptedModel` (the rows of
 * `npm run bench`'s default group).
 *
 * Effect 4 has no supervisor hook per operation: the fiber runtime counts the operations of each slice a fiber runs
 * (`currentOpCount`, which its run loop and its inline continuations both advance, to decide when to yield). The
 * count is read when each slice ends, through the fiber runtime's prototype — a diagnostic's shortcut, never taken
 * outside this tool. The engine's own fibers are all counted, whichever runtime started them.
 */
import { Cause, Console, Effect, Exit } from "effect"
import { scripted } from "./models.js"
import { latency, type Variant } from "./phases.js"
import * as Stores from "./stores.js"

interface FiberCount {
  kind: string | undefined
  steps: number
}

/** Where a primitive operation of Effect 4 keeps its argument (a function, or a tuple holding one). */
const argsKey = "~effect/Effect/args"

/** The source of Parley's function an operation carries, when it carries one. */
const codeOf = (operation: unknown): string | undefined => {
  if (typeof operation !== "object" || operation === null) return undefined
  const value = (operation as Record<string, unknown>)[argsKey]
  const candidates = Array.isArray(value) ? value : [value]
  for (const candidate of candidates) {
    if (typeof candidate !== "function") continue
    const code = candidate.toString().replace(/\s+/g, " ").slice(0, 110)
    if (isParley(code)) return code
  }
  return undefined
}

/** Parley's code runs through `tsx`, which writes arrows without spaces; Effect's own build keeps them. */
const isParley = (code: string) => /[\w)]=>/.test(code)

class Counter {
  counting = false
  steps = 0
  fibers = new Map<number, FiberCount>()
  record(id: number, operations: number, effect: unknown) {
    if (!this.counting) return
    this.steps += operations
    let counted = this.fibers.get(id)
    if (counted === undefined) {
      counted = { kind: undefined, steps: 0 }
      this.fibers.set(id, counted)
    }
    counted.steps += operations
    if (counted.kind === undefined) counted.kind = codeOf(effect)
  }
  reset() {
    this.steps = 0
    this.fibers.clear()
  }
}

/** Adds every slice any fiber runs to `counter` (while it counts). */
const countEveryFiber = (counter: Counter) =>
  Effect.withFiber((fiber) => {
    interface Running {
      readonly id: number
      currentOpCount: number
    }
    const prototype = Object.getPrototypeOf(fiber) as { runLoop: (this: Running, effect: unknown) => unknown }
    const runLoop = prototype.runLoop
    prototype.runLoop = function(this: Running, effect: unknown) {
      try {
        return runLoop.call(this, effect)
      } finally {
        counter.record(this.id, this.currentOpCount, effect)
      }
    }
    return Effect.void
  })

const measure = (counter: Counter, store: Stores.BenchStore, variant: Variant, turns: number, fibers: boolean) =>
  Effect.gen(function*() {
    // The warm-up turns load the engine, its first tree and the store: they are not counted.
    yield* latency({ model: scripted, variant, turns: 20, warmup: 0, store, engine: {} })
    counter.reset()
    counter.counting = true
    yield* latency({ model: scripted, variant, turns, warmup: 0, store, engine: {} }).pipe(
      Effect.ensuring(Effect.sync(() => {
        counter.counting = false
      }))
    )
    yield* Console.log(
      `${store.name} · variant ${variant}: ${(counter.steps / turns).toFixed(0)} runtime steps and ` +
        `${(counter.fibers.size / turns).toFixed(2)} fibers per turn`
    )
    if (!fibers) return
    const kinds = new Map<string, { fibers: number; steps: number }>()
    for (const counted of counter.fibers.values()) {
      const kind = counted.kind ?? "(no operation of Parley's)"
      const total = kinds.get(kind) ?? { fibers: 0, steps: 0 }
      total.fibers++
      total.steps += counted.steps
      kinds.set(kind, total)
    }
    for (const [kind, total] of [...kinds].sort((a, b) => b[1].steps - a[1].steps).slice(0, 15)) {
      yield* Console.log(
        `  ${(total.fibers / turns).toFixed(2).padStart(6)} fibers ${(total.steps / turns).toFixed(0).padStart(6)} ` +
          `steps  ${kind}`
      )
    }
  })

const program = Effect.gen(function*() {
  const args = process.argv.slice(2).filter((arg) => !arg.startsWith("--"))
  const fibers = process.argv.includes("--fibers")
  const stores = args[0] === "memory" ? [Stores.memory] : args[0] === "sqlite" ? [Stores.sqlite()] : [
    Stores.memory,
    Stores.sqlite()
  ]
  const variants: ReadonlyArray<Variant> = args[1] === "A" || args[1] === "B" ? [args[1]] : ["A", "B"]
  const turns = Number(args[2] ?? 300) || 300
  const counter = new Counter()
  yield* countEveryFiber(counter)
  for (const store of stores) {
    for (const variant of variants) yield* measure(counter, store, variant, turns, fibers)
  }
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
})
