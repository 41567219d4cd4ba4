/**
 * The approval-loop benchmark (issues 8 and 9): `npm run bench` (full) or `npm run bench -- --quick` (small sizes,
 * for CI). Every turn is checked (see `workload.ts`); a failed check stops the bench with a non-zero exit code. A
 * missed target is only marked in the table: it never fails the run.
 *
 * Groups of rows (`--only=memory,sql,micro,telemetry`): the in-memory store (issue 8), the SQL stores (issue 9: a
 * SQLite file and PostgreSQL; PostgreSQL missing is a skipped row in quick mode and a failure in full mode), the bare
 * `streamText` calls, the cost of the engine's telemetry (issue 20).
 *
 * Sizes: see `options.ts` (`--turns=`, `--paused=`, `--paused-rss=`, `--budget=`, `--calls=`, `--sql-turns=`,
 * `--at-once=`, `--concurrency=`, `--answers=`, `--paused-sql=`, `--sql-budget=`, or `BENCH_*`).
 * Run with `--expose-gc` (the scripts do) for the heap rows.
 */
import { Cause, Console, Effect, Exit, Option, Result } from "effect"
import * as os from "node:os"
import { answerFromProcess } from "./answerProcess.js"
import { type BenchModel, rawDouble, scripted } from "./models.js"
import * as Options from "./options.js"
import { runChild } from "./pausedProcess.js"
import { atOnce, canCollect, latency, pauseResume, type Stored, type Variant } from "./phases.js"
import * as Report from "./report.js"
import * as Stores from "./stores.js"
import { describeModel, measure, measureSchemaWork, microModels } from "./streamText.js"
import * as Telemetry from "./telemetry.js"

const options = Options.fromArgs(process.argv.slice(2))

// Targets of issue 8 (this machine, in-memory store).
const P50_MS = 0.3
const TURNS_PER_SECOND = 3000
const KEPT_PER_COMPLETED = 0.1 * 1024
const HEAP_PER_PAUSED = 1024
const PAUSE_5000_S = 1
const RESUME_5000_S = 1
const RSS_100K = 1024 ** 3

// Targets of issue 9 (this machine, durable stores; SQLite with synchronous=FULL).
const SQLITE_P50_MS = 0.5
const SQLITE_TURNS_PER_SECOND = 2000
const PG_P50_MS = 3
const SQLITE_ANSWER_P50_MS = 2
const PG_ANSWER_P50_MS = 5

// Targets of issue 17: the default configuration (LocalTransport's default engine options, ScriptedModel, variant B).
const DEFAULT = {
  memory: { p50: 1, turnsPerSecond: 1000, pause: 2, resume: 2 },
  sqlite: { p50: 2, turnsPerSecond: 500, atOnce: 2000, commits: 3, pause: 3, resume: 3 },
  pg: { p50: 4, atOnce: 1000 },
  heapPerPaused: 1024
} as const

const noGc = "n/a (run with --expose-gc)"

/** The value at quantile `p` of sorted samples. */
const at = (samples: ReadonlyArray<number>, p: number) =>
  samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]

const mean = (samples: ReadonlyArray<number>) => samples.reduce((sum, sample) => sum + sample, 0) / samples.length

const describeVariant = (variant: Variant) =>
  variant === "A" ? "A: a CallbackHandler approves while Session.run waits" : "B: answered by id after Blocked"

const latencySection = (model: BenchModel, variant: Variant) =>
  Effect.gen(function*() {
    const result = yield* latency({
      model,
      variant,
      turns: options.turns,
      warmup: options.warmup,
      store: Stores.memory
    })
    const { samples } = result
    const section: Report.Section = {
      title: `${model.name} · variant ${describeVariant(variant)} · ${Report.count(samples.length)} turns`,
      rows: [
        Report.atMost("p50 per turn", at(samples, 0.5), P50_MS, Report.ms),
        Report.info("p99 per turn", Report.ms(at(samples, 0.99))),
        Report.info("mean per turn", Report.ms(mean(samples))),
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
    const result = yield* pauseResume({
      model,
      count: asked,
      warmup: options.warmup,
      budget: options.budget,
      store: Stores.memory
    })
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
            Report.atMost("heap per paused turn (the host keeps ids)", heap, HEAP_PER_PAUSED, Report.kib)
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

// ----------------------------------------------------------------------------
// The SQL stores (issue 9)
// ----------------------------------------------------------------------------

/** The model of the SQL rows: the raw double, so the rows are the engine and the store (compare the memory rows). */
const sqlModel = rawDouble

const storedRows = (stored: Option.Option<Stored>): ReadonlyArray<Report.Row> =>
  Option.match(stored, {
    onNone: () => [],
    onSome: (perTurn) => [
      Report.info("write transactions per turn (COMMITs)", perTurn.transactionsPerTurn.toFixed(2)),
      Report.info("  of which synced to disk (durable points)", perTurn.syncedPerTurn.toFixed(2)),
      Report.info("bytes stored per completed turn (tables and indexes)", Report.kib(perTurn.bytesPerTurn)),
      Report.info("events stored per turn", perTurn.eventsPerTurn.toFixed(1))
    ]
  })

const sqlLatencySection = (store: Stores.BenchStore, variant: Variant, p50Target: number) =>
  Effect.gen(function*() {
    const result = yield* latency({ model: sqlModel, variant, turns: options.sqlTurns, warmup: options.warmup, store })
    const { samples } = result
    const section: Report.Section = {
      title: `${store.name} · ${sqlModel.name} · variant ${describeVariant(variant)} · ${
        Report.count(samples.length)
      } turns, one after another`,
      rows: [
        Report.atMost("p50 per turn", at(samples, 0.5), p50Target, Report.ms),
        Report.info("p99 per turn", Report.ms(at(samples, 0.99))),
        Report.info("mean per turn", Report.ms(mean(samples))),
        Report.info("turns/s (sequential, session start included)", Report.count(result.turnsPerSecond)),
        ...storedRows(result.stored)
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const atOnceSection = (store: Stores.BenchStore, turnsPerSecond: Option.Option<number>) =>
  Effect.gen(function*() {
    const result = yield* atOnce({
      model: sqlModel,
      turns: options.atOnce,
      concurrency: options.concurrency,
      warmup: Math.min(options.warmup, options.atOnce),
      store
    })
    const { samples } = result
    const name = `turns/s, ${Report.count(options.concurrency)} at once (session start included)`
    const section: Report.Section = {
      title: `${store.name} · ${sqlModel.name} · variant A · ${Report.count(samples.length)} turns, ${
        Report.count(options.concurrency)
      } at a time`,
      rows: [
        Option.match(turnsPerSecond, {
          onNone: () => Report.info(name, Report.count(result.turnsPerSecond)),
          onSome: (target) => Report.atLeast(name, result.turnsPerSecond, target, Report.count)
        }),
        Report.info("p50 per turn, with the others running", Report.ms(at(samples, 0.5))),
        Report.info("p99 per turn, with the others running", Report.ms(at(samples, 0.99))),
        ...storedRows(result.stored)
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const answerSection = (store: Stores.BenchStore, p50Target: number) =>
  Effect.gen(function*() {
    const result = yield* answerFromProcess({
      model: sqlModel,
      store,
      answers: options.answers,
      warmup: Math.min(options.warmup, 5)
    })
    const section: Report.Section = {
      title: `${store.name} · open → answer from another process → resumed · ${
        Report.count(result.resumed.length)
      } answers`,
      rows: [
        Report.atMost("p50 from B's answer to A's turn resumed", at(result.resumed, 0.5), p50Target, Report.ms),
        Report.info("p99 from B's answer to A's turn resumed", Report.ms(at(result.resumed, 0.99))),
        Report.info("p50 from B's answer to A's turn completed", Report.ms(at(result.completed, 0.5))),
        Report.info("p99 from B's answer to A's turn completed", Report.ms(at(result.completed, 0.99))),
        Report.info("p50 of B's answer call (its commit included)", Report.ms(at(result.answerCall, 0.5))),
        Report.info("clock error between A and B (± half the best ping)", Report.ms(result.clockError)),
        Report.info(
          "model steps A ran twice (B's engine took the tree up mid-step)",
          `${Report.count(result.repeatedSteps)} in ${Report.count(result.turns)} turns`
        )
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

/**
 * How many turns the SQLite RSS child pauses (and resumes) at a time: enough for its appends to share transactions,
 * few enough that the turns in flight do not weigh on the RSS of the paused ones.
 */
const RSS_CONCURRENCY = 64

const rssSqliteSection = Effect.gen(function*() {
  const asked = options.pausedSql
  const title = `${Report.count(asked)} paused turns on the SQLite store in one process, then all resumed by a ` +
    `restarted engine (ScriptedModel, child process, ${RSS_CONCURRENCY} at a time)`
  if (asked === 0) return { title, rows: [Report.unmeasured("RSS", "skipped (--paused-sql=0)", "< 1.00 GiB")] }
  const result = yield* runChild(asked, options.sqlBudget, {
    store: "sqlite",
    concurrency: RSS_CONCURRENCY,
    resume: true,
    restart: true
  })
  const resumed = result.resumed ?? 0
  const section: Report.Section = {
    title: result.paused < asked
      ? `${title} (stopped by the ${options.sqlBudget} s budget at ${Report.count(result.paused)})`
      : title,
    rows: [
      Report.atMost(`RSS at ${Report.count(result.paused)} paused`, result.rss, RSS_100K, Report.mib),
      Report.atLeast(`turns resumed and completed (of ${Report.count(asked)})`, resumed, asked, Report.count),
      Report.atMost("peak RSS (pausing and resuming)", result.maxRss ?? 0, RSS_100K, Report.mib),
      Report.info(`heap used at ${Report.count(result.paused)} paused`, Report.mib(result.heapUsed)),
      Report.info(`time to pause ${Report.count(result.paused)}`, Report.seconds(result.seconds)),
      Report.info(
        `restart: paused trees the new engine claimed at start, without loading them`,
        `${Report.count(result.restartClaimed ?? 0)} in ${Report.seconds(result.restartSeconds ?? 0)}`
      ),
      Report.info(`time to resume ${Report.count(resumed)}`, Report.seconds(result.resumeSeconds ?? 0))
    ]
  }
  yield* Console.error(`done: ${section.title}`)
  return section
})

/** The PostgreSQL sections, or (quick mode only) one skipped row each when PostgreSQL does not answer. */
const pgSections = (reachable: Result.Result<void, Stores.StoreUnavailable>) =>
  Effect.gen(function*() {
    const where = Stores.redactUrl(options.pgUrl)
    if (Result.isFailure(reachable)) {
      const skipped = `skipped: no PostgreSQL at ${where}`
      return [
        {
          title: `PostgreSQL (local) · approval loop`,
          rows: [Report.unmeasured("p50 per turn", skipped, `≤ ${Report.ms(PG_P50_MS)}`)]
        },
        {
          title: `PostgreSQL (local) · open → answer from another process → resumed`,
          rows: [
            Report.unmeasured("p50 from B's answer to A's turn resumed", skipped, `≤ ${Report.ms(PG_ANSWER_P50_MS)}`)
          ]
        }
      ] satisfies Array<Report.Section>
    }
    const pg = Stores.pg(options.pgUrl)
    return [
      yield* sqlLatencySection(pg, "A", PG_P50_MS),
      yield* sqlLatencySection(pg, "B", PG_P50_MS),
      yield* atOnceSection(pg, Option.none()),
      yield* answerSection(pg, PG_ANSWER_P50_MS)
    ]
  })

const sqlSections = Effect.gen(function*() {
  // PostgreSQL first: a full run without it stops before the long SQLite phases.
  const reachable = yield* Effect.result(Stores.probePg(options.pgUrl))
  if (Result.isFailure(reachable) && !options.quick) return yield* Effect.fail(reachable.failure)
  const sqlite = Stores.sqlite()
  const sections: Array<Report.Section> = [
    yield* sqlLatencySection(sqlite, "A", SQLITE_P50_MS),
    yield* sqlLatencySection(sqlite, "B", SQLITE_P50_MS),
    yield* atOnceSection(sqlite, Option.some(SQLITE_TURNS_PER_SECOND)),
    yield* answerSection(sqlite, SQLITE_ANSWER_P50_MS)
  ]
  sections.push(...yield* pgSections(reachable))
  sections.push(yield* rssSqliteSection)
  return sections
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

// ----------------------------------------------------------------------------
// The default configuration (issue 17): what a user gets from the public API with no tuning
// ----------------------------------------------------------------------------

/** The engine's own defaults: nothing passed to `LocalTransport.layerWith`. */
const defaults = {}

const defaultLatencySection = (
  store: Stores.BenchStore,
  targets: { readonly p50: number; readonly turnsPerSecond?: number; readonly commits?: number }
) =>
  Effect.gen(function*() {
    const result = yield* latency({
      model: scripted,
      variant: "B",
      turns: options.turns,
      warmup: options.warmup,
      store,
      engine: defaults
    })
    const { samples } = result
    const perSecond = "turns/s (sequential, session start included)"
    const section: Report.Section = {
      title: `default configuration · ${store.name} · ${scripted.name} · variant ${describeVariant("B")} · ${
        Report.count(samples.length)
      } turns`,
      rows: [
        Report.atMost("p50 per turn", at(samples, 0.5), targets.p50, Report.ms),
        Report.info("p99 per turn", Report.ms(at(samples, 0.99))),
        targets.turnsPerSecond === undefined
          ? Report.info(perSecond, Report.count(result.turnsPerSecond))
          : Report.atLeast(perSecond, result.turnsPerSecond, targets.turnsPerSecond, Report.count),
        ...Option.match(result.stored, {
          onNone: () => [],
          onSome: (stored) =>
            targets.commits === undefined
              ? storedRows(result.stored)
              : [
                Report.info(
                  "write transactions per turn (COMMITs, session start included)",
                  stored.transactionsPerTurn.toFixed(2)
                ),
                Report.atMost(
                  "  of which synced to disk (durable points)",
                  stored.syncedPerTurn,
                  targets.commits,
                  (n) => n.toFixed(2)
                ),
                ...storedRows(result.stored).slice(2)
              ]
        })
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const defaultPauseSection = (store: Stores.BenchStore, targets: { readonly pause: number; readonly resume: number }) =>
  Effect.gen(function*() {
    const asked = options.paused
    const result = yield* pauseResume({
      model: scripted,
      count: asked,
      warmup: options.warmup,
      budget: options.budget,
      store,
      engine: defaults
    })
    const n = result.count
    const scale = n / 5000
    const section: Report.Section = {
      title: `default configuration · ${store.name} · ${Report.count(n)} turns paused at once, then resumed`,
      rows: [
        Report.atMost(`time to pause ${Report.count(n)}`, result.pause.seconds, targets.pause * scale, Report.seconds),
        Option.match(result.heapPerPaused, {
          onNone: () => Report.unmeasured("heap per paused turn", noGc, `≤ ${Report.kib(DEFAULT.heapPerPaused)}`),
          onSome: (heap) =>
            Report.atMost("heap per paused turn (the host keeps ids)", heap, DEFAULT.heapPerPaused, Report.kib)
        }),
        Report.atMost(`time to resume ${Report.count(n)}`, result.resumeSeconds, targets.resume * scale, Report.seconds)
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const defaultAtOnceSection = (store: Stores.BenchStore, target: number) =>
  Effect.gen(function*() {
    const result = yield* atOnce({
      model: scripted,
      turns: options.atOnce,
      concurrency: options.concurrency,
      warmup: Math.min(options.warmup, options.atOnce),
      store,
      engine: defaults
    })
    const section: Report.Section = {
      title: `default configuration · ${store.name} · ${Report.count(result.samples.length)} turns, ${
        Report.count(options.concurrency)
      } at a time (variant A)`,
      rows: [
        Report.atLeast("turns/s", result.turnsPerSecond, target, Report.count),
        Report.info("p50 per turn, with the others running", Report.ms(at(result.samples, 0.5))),
        ...storedRows(result.stored)
      ]
    }
    yield* Console.error(`done: ${section.title}`)
    return section
  })

const defaultSections = Effect.gen(function*() {
  const reachable = yield* Effect.result(Stores.probePg(options.pgUrl))
  const sqlite = Stores.sqlite()
  const sections: Array<Report.Section> = [
    yield* defaultLatencySection(Stores.memory, DEFAULT.memory),
    yield* defaultPauseSection(Stores.memory, DEFAULT.memory),
    yield* defaultLatencySection(sqlite, DEFAULT.sqlite),
    yield* defaultPauseSection(sqlite, DEFAULT.sqlite),
    yield* defaultAtOnceSection(sqlite, DEFAULT.sqlite.atOnce)
  ]
  if (Result.isSuccess(reachable)) {
    const pg = Stores.pg(options.pgUrl)
    sections.push(yield* defaultLatencySection(pg, DEFAULT.pg), yield* defaultAtOnceSection(pg, DEFAULT.pg.atOnce))
  }
  return sections
})

const notes = [
  "",
  "Notes:",
  "- default configuration: LocalTransport with the engine's default options (idle trees kept a minute, …),",
  "  ScriptedModel.fromFunction, one new session per turn, the approval answered by id after Blocked and the turn",
  "  waited for again with Turn.result({ after }); the other groups are tuned (idle trees evicted after 20 ms).",
  "- per turn: from Session.run to the turn's final state (each turn in a new session, started outside the timer);",
  "  turns/s: turns one after another over the whole phase (session start and checks included).",
  "- heap kept per completed turn: heap growth after forced GCs over the phase; it includes the memory store's log of",
  "  each turn's session, and for ScriptedModel its recording of every call (prompt and tools, kept for `calls`).",
  "- heap per paused turn: includes what the host keeps of each turn to answer it later (its session, turn and callback ids) and the bench's ledger entry for it.",
  "- pause/resume targets are scaled to the number of turns paused (1 s per 5,000).",
  "- SQL rows: a fresh database per phase (a SQLite file in a temporary folder, WAL, synchronous=FULL: every event",
  "  durable before it is visible; a new PostgreSQL schema); the raw model double, so they time the engine and the",
  "  store. Write transactions: the store's BEGIN … COMMIT; bytes: SQLite page_count × page_size, PostgreSQL",
  "  pg_total_relation_size of the parley_* tables, growth over the measured turns.",
  "- answer from another process: B is a child process with its own LocalTransport over the same database; times",
  "  run from just before B's Transport.answer call, on clocks corrected by the offset of the best of 20 pings."
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
      `per pause phase, ${options.calls} streamText calls; SQL: ${options.sqlTurns} turns per latency phase, ` +
      `${options.atOnce} turns ${options.concurrency} at a time, ${options.answers} answers from another process, ` +
      `${options.pausedSql} paused in the SQLite child (${options.sqlBudget} s budget); groups: ` +
      [...options.only].join(", "),
      ""
    ].join("\n")
  )
  const sections: Array<Report.Section> = []
  if (options.only.has("default")) sections.push(...yield* defaultSections)
  if (options.only.has("memory")) {
    for (const model of [scripted, rawDouble]) {
      for (const variant of ["A", "B"] as const) sections.push(yield* latencySection(model, variant))
    }
    sections.push(yield* pauseSection(scripted, options.paused))
    if (options.rawPaused > 0) sections.push(yield* pauseSection(rawDouble, options.rawPaused))
    sections.push(yield* rssSection)
  }
  if (options.only.has("sql")) sections.push(...yield* sqlSections)
  if (options.only.has("micro")) sections.push(yield* microSection)
  if (options.only.has("telemetry")) {
    sections.push(
      yield* Telemetry.section({
        turns: Math.max(options.turns, options.quick ? 300 : 1000),
        warmup: Math.min(options.warmup, 100),
        rounds: options.quick ? 4 : 6,
        processes: options.quick ? 2 : 3,
        pairs: options.quick ? 1000 : 2500,
        sqlitePairs: options.quick ? 100 : 400
      })
    )
  }
  const [end1] = os.loadavg()
  yield* Console.log(Report.render(sections))
  yield* Console.log(notes)
  yield* Console.log(`\nload ${end1.toFixed(2)} at the end.`)
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    const failure = Cause.findErrorOption(exit.cause)
    console.error(Option.match(failure, { onNone: () => Cause.pretty(exit.cause), onSome: (error) => error.message }))
    console.error(
      Option.exists(failure, (error) => error._tag === "StoreUnavailable")
        ? "bench: a store the full run needs is missing (PostgreSQL: bash scripts/postgres.sh), stopping (exit 1)"
        : "bench: correctness failure, stopping (exit 1)"
    )
    process.exitCode = 1
  }
})
