/**
 * The cost of telemetry measured in pairs of turns (issue 20): one runtime, one engine, turns that alternate between
 * running under `ParleyTelemetry.layerSdk`'s tracer (spans batched into an in-memory exporter) and under none. The
 * engine traces a tree when the fiber that sends its message runs under a tracer, so both kinds of turn share the
 * same process, JIT state, heap and machine load, turn by turn: a load that drifts over a phase weighs on both sides
 * alike. Each turn is timed (wall) and its process CPU time taken (`process.cpuUsage`, which includes the garbage
 * collector's helper threads).
 *
 * ```sh
 * node --expose-gc --conditions=@parley/source --import tsx bench/src/telemetryPairs.ts 5000 [--store=sqlite] [--json]
 * ```
 *
 * `--store=sqlite` (or `PAIRS_STORE=sqlite`) runs them over a new SQLite file (the store's default options) instead of
 * the memory store; `--json` prints the result as JSON (what `measureInProcesses` reads from its child processes).
 * Diagnostics: `PAIRS_TRACER=noop` traces with a tracer whose spans record nothing (what the engine's own telemetry
 * costs, without any SDK); `PAIRS_PROCESSOR=simple` exports each span as it ends instead of in batches.
 */
import { NodeServices } from "@effect/platform-node"
import { type ExportResult, ExportResultCode } from "@opentelemetry/core"
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor
} from "@opentelemetry/sdk-trace-base"
import { Agent, Session } from "@parley/core"
import { ParleyTelemetry } from "@parley/telemetry"
import { Cause, Console, Effect, Exit, Layer, Schema, Tracer } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { makeRawDouble } from "./models.js"
import { runtime } from "./phases.js"
import * as Stores from "./stores.js"
import { approveAll, checkCompleted, Ledger, makeAgent, message } from "./workload.js"

/**
 * An in-memory exporter that counts the spans it is given and keeps none: the bench times the engine's telemetry, not
 * a test exporter's heap of a few thousand spans (which slows every garbage collection of the phase down).
 */
export class CountedSpans extends InMemorySpanExporter {
  count = 0
  override export(spans: Array<ReadableSpan>, done: (result: ExportResult) => void): void {
    this.count += spans.length
    done({ code: ExportResultCode.SUCCESS })
  }
  override shutdown(): Promise<void> {
    return Promise.resolve()
  }
}

let ids = 0
/** A tracer whose spans record nothing: what the engine's telemetry costs without any SDK. */
const noopTracer = Tracer.make({
  span: (options) => {
    const spanId = `span${++ids}`
    return {
      _tag: "Span",
      name: options.name,
      spanId,
      traceId: options.parent._tag === "Some" ? options.parent.value.traceId : spanId,
      parent: options.parent,
      annotations: options.annotations,
      status: { _tag: "Started", startTime: options.startTime },
      attributes: new Map(),
      links: options.links,
      sampled: options.sampled,
      kind: options.kind,
      end: () => undefined,
      attribute: () => undefined,
      event: () => undefined,
      addLinks: () => undefined
    }
  }
})

const median = (values: Array<number>) => values.sort((a, b) => a - b)[values.length >> 1]
const mean = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0) / values.length

/** What a paired measure found: p50 wall and mean CPU time per turn (ms) each way, and the spans a traced turn made. */
export interface Paired {
  readonly wallOff: number
  readonly wallOn: number
  readonly cpuOff: number
  readonly cpuOn: number
  readonly spansPerTurn: number
}

/**
 * Measures `pairs` pairs of turns (after `warmup` pairs) over `store` (a new one), the traced one first in every other
 * pair.
 */
export const measure = (pairs: number, warmup: number, store: Stores.BenchStore = Stores.memory) =>
  Effect.scoped(Effect.gen(function*() {
    const exporter = new CountedSpans()
    // The SDK's provider lives as long as the measure (its scope); its tracer is taken out to trace half the turns.
    // (Building the layer sets the tracer of this fiber for the rest of the scope: the other half runs under the
    // tracer from before, Effect's native one.)
    const native = yield* Effect.tracer
    const processor = process.env.PAIRS_PROCESSOR === "simple"
      ? new SimpleSpanProcessor(exporter)
      : new BatchSpanProcessor(exporter)
    const telemetry = yield* Layer.build(
      ParleyTelemetry.layerSdk({ serviceName: "parley-bench", spanProcessor: processor })
    )
    const tracer = process.env.PAIRS_TRACER === "noop"
      ? noopTracer
      : yield* Effect.tracer.pipe(Effect.provideContext(telemetry))
    const database = yield* store.open
    const ledger = new Ledger()
    const agent = makeAgent(ledger)
    const model = makeRawDouble(ledger)
    const wall = { on: [] as Array<number>, off: [] as Array<number> }
    const cpu = { on: [] as Array<number>, off: [] as Array<number> }
    const turn = (traced: boolean, record: boolean) => {
      const run = Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        ledger.open(session.id)
        const before = process.cpuUsage()
        const started = performance.now()
        const state = yield* Session.run(session, message(session.id))
        const elapsed = performance.now() - started
        const used = process.cpuUsage(before)
        yield* checkCompleted(ledger, "pairs", session, state)
        if (!record) return
        ;(traced ? wall.on : wall.off).push(elapsed)
        ;(traced ? cpu.on : cpu.off).push((used.user + used.system) / 1000)
      })
      return Effect.withTracer(run, traced ? tracer : native)
    }
    yield* Effect.gen(function*() {
      for (let i = 0; i < warmup + pairs; i++) {
        const tracedFirst = i % 2 === 1
        yield* turn(tracedFirst, i >= warmup)
        yield* turn(!tracedFirst, i >= warmup)
      }
    }).pipe(Effect.provide(Layer.merge(runtime(model, database.layer), approveAll(ledger))))
    yield* Effect.promise(() => processor.forceFlush())
    return {
      wallOff: median(wall.off),
      wallOn: median(wall.on),
      cpuOff: mean(cpu.off),
      cpuOn: mean(cpu.on),
      spansPerTurn: exporter.count / (warmup + pairs)
    }
  }))

/** The measure's result as a child process prints it (`--json`). */
const PairedJson = Schema.fromJsonString(Schema.Struct({
  wallOff: Schema.Number,
  wallOn: Schema.Number,
  cpuOff: Schema.Number,
  cpuOn: Schema.Number,
  spansPerTurn: Schema.Number
}))

/** What `processes` paired measures found, each in a process of its own. */
export interface PairedProcesses extends Paired {
  /** Each process's extra CPU time per traced turn (a fraction of the untraced one's). */
  readonly costs: ReadonlyArray<number>
}

const entry = fileURLToPath(import.meta.url)

/**
 * Runs the paired measure in `processes` new processes one after another (this process's Node flags), `pairs` pairs
 * each over `store`, and averages them. A process's JIT and heap settle differently from one run to the next (one
 * 5,000-pair run of the memory store's loop measured anywhere from +2 to +12 %); several fresh processes average that
 * out, and none runs on the garbage of the sections before it.
 */
export const measureInProcesses = (processes: number, pairs: number, store: "memory" | "sqlite") =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const results: Array<Paired> = []
    for (let i = 0; i < processes; i++) {
      const command = ChildProcess.make(
        process.execPath,
        [...process.execArgv, entry, String(pairs), `--store=${store}`, "--json"],
        { stderr: "inherit" }
      )
      const output = yield* spawner.string(command)
      results.push(yield* Schema.decodeUnknownEffect(PairedJson)(output.trim().split("\n").at(-1)))
    }
    const average = (f: (paired: Paired) => number) => mean(results.map(f))
    const result: PairedProcesses = {
      wallOff: average((paired) => paired.wallOff),
      wallOn: average((paired) => paired.wallOn),
      cpuOff: average((paired) => paired.cpuOff),
      cpuOn: average((paired) => paired.cpuOn),
      spansPerTurn: average((paired) => paired.spansPerTurn),
      costs: results.map((paired) => (paired.cpuOn - paired.cpuOff) / paired.cpuOff)
    }
    return result
  }).pipe(Effect.provide(NodeServices.layer))

const main = Effect.gen(function*() {
  const pairs = Number(process.argv[2] ?? 10000) || 10000
  const store = process.argv.includes("--store=sqlite") || process.env.PAIRS_STORE === "sqlite"
    ? Stores.sqlite()
    : Stores.memory
  const result = yield* measure(pairs, Math.min(2000, pairs >> 2), store)
  if (process.argv.includes("--json")) return yield* Console.log(JSON.stringify(result))
  const percent = (on: number, off: number) => `${(((on - off) / off) * 100).toFixed(1)} %`
  yield* Console.log(
    `wall p50 ${result.wallOff.toFixed(3)} / ${result.wallOn.toFixed(3)} ms (${
      percent(result.wallOn, result.wallOff)
    }); ` +
      `CPU mean ${result.cpuOff.toFixed(3)} / ${result.cpuOn.toFixed(3)} ms (${
        percent(result.cpuOn, result.cpuOff)
      }); ` +
      `${result.spansPerTurn.toFixed(1)} spans per traced turn`
  )
})

if (process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  Effect.runPromiseExit(main).then((exit) => {
    if (Exit.isFailure(exit)) {
      console.error(Cause.pretty(exit.cause))
      process.exitCode = 1
    }
  })
}
