/**
 * The approval-loop benchmark (issue 8): `npm run bench` (full) or `npm run bench -- --quick` (small sizes, for CI).
 * Every turn is checked (see `workload.ts`); a failed check stops the bench with a non-zero exit code. A missed
 * target is only marked in the table: it never fails the run.
 *
 * Sizes: see `options.ts` (`--turns=`, `--paused=`, `--paused-rss=`, `--budget=`, `--calls=`, or `BENCH_*`).
 * Run with `--expose-gc` (the scripts do) for the heap rows.
 */
import { Cause, Console, Effect, Exit, Option } from "effect"
import * as os from "node:os"
import { type BenchModel, rawDouble, scripted } from "./models.js"
import * as Options from "./options.js"
import { runChild } from "./pausedProcess.js"
import { canCollect, latency, pauseResume, type Variant } from "./phases.js"
import * as Report from "./report.js"
import { describeModel, measure, measureSchemaWork, microModels } from "./streamText.js"

const options = Options.fromArgs(process.argv.slice(2))

// Targets of issue 8 (this machine, in-memory store).
const P50_MS = 0.3
const TURNS_PER_SECOND = 3000
const KEPT_PER_COMPLETED = 0.1 * 1024
const HEAP_PER_PAUSED = 1024
const PAUSE_5000_S = 1
const RESUME_5000_S = 1
const RSS_100K = 1024 ** 3

const noGc = "n/a (run with --expose-gc)"

const describeVariant = (variant: Variant) =>
  variant === "A" ? "A: a CallbackHandler approves while Session.run waits" : "B: answered by id after Blocked"

const latencySection = (model: BenchModel, variant: Variant) =>
  Effect.gen(function*() {
    const result = yield* latency({ model, variant, turns: options.turns, warmup: options.warmup })
    const { samples } = result
    const at = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]
    const mean = samples.reduce((sum, sample) => sum + sample, 0) / samples.length
    const section: Report.Section = {
      title: `${model.name} · variant ${describeVariant(variant)} · ${Report.count(samples.length)} turns`,
      rows: [
        Report.atMost("p50 per turn", at(0.5), P50_MS, Report.ms),
        Report.info("p99 per turn", Report.ms(at(0.99))),
        Report.info("mean per turn", Report.ms(mean)),
        Report.atLeast(
          "turns/s (sequential, session start included)",
          result.turnsPerSecond,
          TURNS_PER_SECOND,
          Report.count
        ),
        Option.match(result.keptPerTurn, {
          onNone: () => Report.unmeasured("heap kept per completed turn", noGc, `≤ ${Report.kib(KEPT_PER_COMPLETED)}`),
          onSome: (kept) =>
            Report.atMost("heap kept per completed turn (store's log included)", kept, KEPT_PER_COMPLETED, Report.kib)
        })
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const pauseSection = (model: BenchModel, asked: number) =>
  Effect.gen(function*() {
    const result = yield* pauseResume({ model, count: asked, warmup: options.warmup, budget: options.budget })
    const n = result.count
    const capped = n < asked
      ? ` (stopped by the ${options.budget} s budget at ${Report.count(n)} of ${Report.count(asked)})`
      : ""
    const scaled = n === 5000 ? "" : ` (target scaled: 1 s per 5,000)`
    const section: Report.Section = {
      title: `${model.name} · ${Report.count(n)} turns paused at once, each blocked on its approval${capped}`,
      rows: [
        Report.atMost(
          `time to pause ${Report.count(n)}${scaled}`,
          result.pause.seconds,
          (PAUSE_5000_S * n) / 5000,
          Report.seconds
        ),
        Option.match(result.heapPerPaused, {
          onNone: () => Report.unmeasured("heap per paused turn", noGc, `≤ ${Report.kib(HEAP_PER_PAUSED)}`),
          onSome: (heap) =>
            Report.atMost("heap per paused turn (host's Blocked included)", heap, HEAP_PER_PAUSED, Report.kib)
        }),
        Report.atMost(
          `time to resume ${Report.count(n)} (answer all by id, wait for all)${scaled}`,
          result.resumeSeconds,
          (RESUME_5000_S * n) / 5000,
          Report.seconds
        )
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const rssSection = Effect.gen(function*() {
  const asked = options.pausedRss
  const title = `${Report.count(asked)} paused turns in one process (ScriptedModel, child process)`
  if (asked === 0) {
    return { title, rows: [Report.unmeasured("RSS", "skipped (full mode only)", `< ${Report.mib(RSS_100K)}`)] }
  }
  const result = yield* runChild(asked, options.budget)
  const capped = result.paused < asked
  const rss = capped
    ? result.rssBefore + ((result.rss - result.rssBefore) * asked) / Math.max(1, result.paused)
    : result.rss
  const section: Report.Section = {
    title: capped
      ? `${title} (stopped by the ${options.budget} s budget at ${Report.count(result.paused)})`
      : title,
    rows: [
      capped
        ? {
          ...Report.atMost(`RSS, extrapolated to ${Report.count(asked)}`, rss, RSS_100K, Report.mib),
          measured: `≈ ${Report.mib(rss)} (${Report.mib(result.rss)} at ${Report.count(result.paused)})`
        }
        : Report.atMost("RSS", rss, RSS_100K, Report.mib),
      Report.info(`heap used at ${Report.count(result.paused)} paused`, Report.mib(result.heapUsed)),
      Report.info(`time to pause ${Report.count(result.paused)}`, Report.seconds(result.seconds))
    ]
  }
  yield* Console.error(`done: ${section.title}`)
  return section
})

const microSection = Effect.gen(function*() {
  const rows: Array<Report.Row> = []
  for (const model of microModels) {
    const result = yield* measure(model, options.calls)
    rows.push(Report.info(`${describeModel(model)}: per call`, Report.perCall(result)))
  }
  const schema = yield* measureSchemaWork(options.calls)
  rows.push(
    Report.info(
      "of which LanguageModel.make rebuilds per call: Response.StreamPart(toolkit)",
      Report.perCall(schema.build)
    ),
    Report.info("  … build + compile its decoder (Schema.decode)", Report.perCall(schema.compile))
  )
  const section: Report.Section = {
    title: `bare streamText call, drained (lookup_price toolkit, disableToolCallResolution) · ${
      Report.count(options.calls)
    } calls`,
    rows
  }
  yield* Console.error(`done: ${section.title}`)
  return section
})

const notes = [
  "",
  "Notes:",
  "- per turn: from Session.run to the turn's final state (each turn in a new session, started outside the timer);",
  "  turns/s: turns one after another over the whole phase (session start and checks included).",
  "- heap kept per completed turn: heap growth after forced GCs over the phase; it includes the memory store's log of",
  "  each turn's session, and for ScriptedModel its recording of every call (prompt and tools, kept for `calls`).",
  "- heap per paused turn: includes the host's Blocked of each turn and the bench's ledger entry for it.",
  "- pause/resume targets are scaled to the number of turns paused (1 s per 5,000)."
].join("\n")

const program = Effect.gen(function*() {
  const [load1, load5, load15] = os.loadavg()
  yield* Console.log(
    [
      `# Parley approval-loop bench (${options.quick ? "quick" : "full"})`,
      "",
      `${new Date().toISOString()} · node ${process.version} · ${os.cpus().length} cores · ` +
      `load ${load1.toFixed(2)} ${load5.toFixed(2)} ${load15.toFixed(2)} at start` +
      (canCollect ? "" : " · no --expose-gc: heap rows skipped"),
      `sizes: ${options.turns} turns per latency phase (+${options.warmup} warm-up), ${options.paused} paused ` +
      `(raw double: ${options.rawPaused}), ${options.pausedRss} paused in the RSS child, ${options.budget} s budget ` +
      `per pause phase, ${options.calls} streamText calls`,
      ""
    ].join("\n")
  )
  const sections: Array<Report.Section> = []
  for (const model of [scripted, rawDouble]) {
    for (const variant of ["A", "B"] as const) sections.push(yield* latencySection(model, variant))
  }
  sections.push(yield* pauseSection(scripted, options.paused))
  if (options.rawPaused > 0) sections.push(yield* pauseSection(rawDouble, options.rawPaused))
  sections.push(yield* rssSection)
  sections.push(yield* microSection)
  const [end1] = os.loadavg()
  yield* Console.log(Report.render(sections))
  yield* Console.log(notes)
  yield* Console.log(`\nload ${end1.toFixed(2)} at the end.`)
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    console.error(Option.match(failure, { onNone: () => Cause.pretty(exit.cause), onSome: (error) => error.message }))
    console.error("bench: correctness failure, stopping (exit 1)")
    process.exitCode = 1
  }
})
