/**
 * The runtime steps and fibers a turn of the approval loop costs: every operation Effect's fiber runtime evaluates
 * (`Supervisor.onEffect`) and every fiber it starts, per turn, and which fibers run them. Unlike a time, the count does
 * not move with the machine's load: it is the measure to compare two versions of the engine by (the CPU a turn takes
 * follows it, about a microsecond a step on this machine, garbage collection included).
 *
 * ```sh
 * node --conditions=@parley/source --import tsx bench/src/steps.ts            # memory and SQLite, variants A and B
 * node --conditions=@parley/source --import tsx bench/src/steps.ts sqlite B 300 --fibers
 * ```
 *
 * Arguments: store (`memory`, `sqlite`, or both by default), variant (`A`, `B`, or both), turns (300), and
 * `--fibers` for the fibers of a turn by kind (named by the first of their own continuations, in Parley's code when
 * there is one). The engine runs with its default options and `ScriptedModel` (the rows of `npm run bench`'s
 * default group).
 *
 * Some of the engine's fibers are started by runtimes captured before the supervisor was in place (an engine's layer
 * keeps the runtime it was built with): to count them too, every fiber entering its run loop is switched to the
 * counting supervisor (a diagnostic's shortcut through the fiber runtime's prototype, never done outside this tool).
 */
import { Cause, Console, Effect, Exit, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { scripted } from "./models.js"
import { latency, type Variant } from "./phases.js"
import * as Stores from "./stores.js"

interface FiberCount {
  kind: string | undefined
  steps: number
}

/** The source of an operation's continuation or body, when it has one. */
const codeOf = (operation: Record<string, unknown>): string | undefined => {
  const code = operation.effect_instruction_i1 ?? operation.effect_instruction_i0 ?? operation.commit
  return typeof code === "function" ? code.toString().replace(/\s+/g, " ").slice(0, 110) : undefined
}

/** Parley's code runs through `tsx`, which writes arrows without spaces; Effect's own build keeps them. */
const isParley = (code: string) => /[\w)]=>/.test(code)

class Counter extends Supervisor.AbstractSupervisor<void> {
  steps = 0
  fibers = new Map<number, FiberCount>()
  get value() {
    return Effect.void
  }
  override onEffect(fiber: { id(): { id: number } }, operation: unknown) {
    this.steps++
    const id = fiber.id().id
    let counted = this.fibers.get(id)
    if (counted === undefined) {
      counted = { kind: undefined, steps: 0 }
      this.fibers.set(id, counted)
    }
    counted.steps++
    if (counted.kind === undefined) {
      const code = codeOf(operation as Record<string, unknown>)
      if (code !== undefined && isParley(code)) counted.kind = code
    }
  }
  reset() {
    this.steps = 0
    this.fibers.clear()
  }
}

/** Switches every fiber that enters its run loop to `counter`, with op supervision on. */
const countEveryFiber = (counter: Counter) =>
  Effect.withFiberRuntime((fiber) => {
    interface Running {
      currentRuntimeFlags: number
      currentSupervisor: unknown
    }
    const prototype = Object.getPrototypeOf(fiber) as { runLoop: (this: Running, effect: unknown) => unknown }
    const runLoop = prototype.runLoop
    prototype.runLoop = function(this: Running, effect: unknown) {
      this.currentRuntimeFlags |= RuntimeFlags.OpSupervision
      this.currentSupervisor = counter
      return runLoop.call(this, effect)
    }
    return Effect.void
  })

const measure = (counter: Counter, store: Stores.BenchStore, variant: Variant, turns: number, fibers: boolean) =>
  Effect.gen(function*() {
    // The warm-up turns load the engine, its first tree and the store: they are not counted.
    yield* latency({ model: scripted, variant, turns: 20, warmup: 0, store, engine: {} })
    counter.reset()
    yield* latency({ model: scripted, variant, turns, warmup: 0, store, engine: {} }).pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
    yield* Console.log(
      `${store.name} · variant ${variant}: ${(counter.steps / turns).toFixed(0)} runtime steps and ` +
        `${(counter.fibers.size / turns).toFixed(2)} fibers per turn`
    )
    if (!fibers) return
    const kinds = new Map<string, { fibers: number; steps: number }>()
    for (const counted of counter.fibers.values()) {
      const kind = counted.kind ?? "(no continuation of Parley's)"
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
