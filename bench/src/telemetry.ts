/**
 * The cost of the engine's telemetry (issue 20): the approval loop (variant A, the raw model double) with no tracer,
 * then with `ParleyTelemetry.layerSdk` exporting every span into an in-memory exporter (batched, as a production
 * exporter is), in pairs of phases over the memory store whose order alternates (the machine's load drifts, and the
 * second phase of a pair runs on the first one's garbage), then in paired turns in one engine (`telemetryPairs.ts`),
 * in fresh processes, over the memory store and a SQLite file. The targets are on the paired turns' CPU time: with no
 * tracer on either side they differ by about ±2 %, where two phases minutes apart on this shared machine differ by up
 * to 6 % CPU and 15 % wall. The wall-time p50s are shown too. A run with no tracer must make no spans and count no
 * metrics: that is checked, not timed.
 */
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { EngineTelemetry } from "@parley/runtime"
import { ParleyTelemetry } from "@parley/telemetry"
import { Console, Effect, Fiber, Metric } from "effect"
import { rawDouble } from "./models.js"
import { latency } from "./phases.js"
import * as Report from "./report.js"
import * as Stores from "./stores.js"
import * as Pairs from "./telemetryPairs.js"
import { CountedSpans } from "./telemetryPairs.js"

/** Runs `effect` in a fiber of its own: a tracer its layer installs does not stay on the caller's fiber. */
const isolated = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.flatMap(Effect.flatMap(Effect.forkDetach(effect), Fiber.await), (exit) => exit)

const turnsCounted = Effect.map(
  Metric.value(Metric.withAttributes(EngineTelemetry.turns, { "parley.turn.state": "Completed" })),
  (state) => state.count
)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const percent = (n: number) => `${(n * 100).toFixed(1)} %`

/** The overhead target of issue 20: telemetry on costs at most 10 % more per turn. */
const OVERHEAD = 0.1

/** The rows of one paired measure (`telemetryPairs.ts`, in processes of its own): the target is on its CPU time. */
const pairedRows = (
  store: string,
  processes: number,
  pairs: number,
  paired: Pairs.PairedProcesses
): ReadonlyArray<Report.Row> => [
  Report.info(
    `paired turns, ${store} (${processes} processes × ${Report.count(pairs)} pairs): CPU mean per turn, ` +
      "no tracer / traced (spans per traced turn)",
    `${Report.ms(paired.cpuOff)} / ${Report.ms(paired.cpuOn)} (${paired.spansPerTurn.toFixed(1)})`
  ),
  Report.atMost(
    `cost of telemetry per turn, paired, ${store} (CPU time; each process: ${paired.costs.map(percent).join(", ")})`,
    (paired.cpuOn - paired.cpuOff) / paired.cpuOff,
    OVERHEAD,
    percent
  ),
  Report.info(
    "paired turns: p50 per turn (wall), no tracer / traced",
    `${Report.ms(paired.wallOff)} / ${Report.ms(paired.wallOn)} (${
      percent((paired.wallOn - paired.wallOff) / paired.wallOff)
    })`
  )
]

export const section = (options: {
  readonly turns: number
  readonly warmup: number
  readonly rounds: number
  /** Processes the paired measures run in, one after another (their results averaged). */
  readonly processes: number
  /** Pairs of turns (one traced, one not) each process measures in one engine over the memory store. */
  readonly pairs: number
  /** The same over a SQLite file (the store's default options): every append a span too. */
  readonly sqlitePairs: number
}) =>
  Effect.gen(function*() {
    /** The phase, and the process's CPU time per turn over it (warm-up and session starts included), in ms. */
    const phase = (store: Stores.BenchStore) =>
      Effect.suspend(() => {
        const cpu = process.cpuUsage()
        return Effect.map(
          latency({ model: rawDouble, variant: "A", turns: options.turns, warmup: options.warmup, store }),
          (result) => {
            const used = process.cpuUsage(cpu)
            return { ...result, cpu: (used.user + used.system) / 1000 / (options.turns + options.warmup) }
          }
        )
      })
    const plainCpu: Array<number> = []
    const tracedCpu: Array<number> = []
    const plain: Array<number> = []
    const traced: Array<number> = []
    let spans = 0
    let countedWithout = 0
    // The order alternates from round to round: the second phase of a pair runs on the first one's garbage, which
    // alone makes it look ~10 % slower (measured with no tracer on either side).
    const runPlain = Effect.gen(function*() {
      const before = yield* turnsCounted
      const off = yield* isolated(phase(Stores.memory))
      countedWithout += (yield* turnsCounted) - before
      plain.push(off.samples[Math.floor(off.samples.length / 2)])
      plainCpu.push(off.cpu)
    })
    const runTraced = Effect.gen(function*() {
      const exporter = new CountedSpans()
      const on = yield* isolated(
        phase(Stores.memory).pipe(
          Effect.provide(ParleyTelemetry.layerSdk({
            serviceName: "parley-bench",
            spanProcessor: new BatchSpanProcessor(exporter)
          }))
        )
      )
      traced.push(on.samples[Math.floor(on.samples.length / 2)])
      tracedCpu.push(on.cpu)
      spans += exporter.count
    })
    for (let round = 0; round < options.rounds; round++) {
      if (round % 2 === 0) {
        yield* runPlain
        yield* runTraced
      } else {
        yield* runTraced
        yield* runPlain
      }
    }
    const off = median(plain)
    const on = median(traced)
    const offCpu = median(plainCpu)
    const onCpu = median(tracedCpu)
    const total = options.rounds * (options.turns + options.warmup)
    const paired = yield* Pairs.measureInProcesses(options.processes, options.pairs, "memory")
    const pairedSqlite = yield* Pairs.measureInProcesses(options.processes, options.sqlitePairs, "sqlite")
    const result: Report.Section = {
      title: `telemetry · ${rawDouble.name} · variant A · ${options.rounds} rounds of ${
        Report.count(options.turns)
      } turns each way`,
      rows: [
        Report.info("CPU time per turn, no tracer (median of the rounds)", Report.ms(offCpu)),
        Report.info("CPU time per turn, spans exported in memory (ParleyTelemetry.layerSdk)", Report.ms(onCpu)),
        // Not the target: with no tracer on either side (an A/A run of this section) the phases differed by +6.3 % and
        // -3.5 % CPU (+14.6 % and -6.6 % wall p50) in two runs; paired turns by -1.1 % and +1.7 % (the target below).
        Report.info(
          "cost of telemetry per turn (CPU time, phases: see the paired row)",
          percent((onCpu - offCpu) / offCpu)
        ),
        Report.info("p50 per turn (wall), no tracer / traced", `${Report.ms(off)} / ${Report.ms(on)}`),
        Report.info("cost of telemetry per turn (wall p50)", percent((on - off) / off)),
        Report.info("spans exported per traced turn", (spans / total).toFixed(1)),
        ...pairedRows("memory store", options.processes, options.pairs, paired),
        ...pairedRows("SQLite file", options.processes, options.sqlitePairs, pairedSqlite),
        Report.atMost("turns counted by the metrics with no tracer (nothing made)", countedWithout, 0, Report.count)
      ]
    }
    yield* Console.error(`done: ${result.title}`)
    return result
  })
