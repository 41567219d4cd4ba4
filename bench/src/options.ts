/**
 * The sizes of a bench run: `--quick` (small sizes, for CI) or full, each size overridable by a flag
 * (`--turns=200`) or an environment variable (`BENCH_TURNS=200`); a flag wins over the variable.
 *
 * | flag           | variable           | full     | quick    | what                                           |
 * |----------------|--------------------|----------|----------|------------------------------------------------|
 * | `--turns`      | `BENCH_TURNS`      | 1000     | 30       | measured turns per latency phase               |
 * | `--warmup`     | `BENCH_WARMUP`     | 500      | 20       | unmeasured turns before each latency phase     |
 * | `--paused`     | `BENCH_PAUSED`     | 5000     | 200      | turns paused at once (pause / resume phase)    |
 * | `--raw-paused` | `BENCH_RAW_PAUSED` | =paused  | =paused  | the same with the raw model double (0: skip)   |
 * | `--paused-rss` | `BENCH_PAUSED_RSS` | 100000   | 0        | paused turns in the RSS child process (0: skip)|
 * | `--budget`     | `BENCH_BUDGET`     | 180      | 20       | seconds a pause phase may take before it stops |
 * | `--calls`      | `BENCH_CALLS`      | 2000     | 200      | calls per bare `streamText` microbench         |
 * | `--sql-turns`  | `BENCH_SQL_TURNS`  | =turns   | =turns   | measured turns per SQL latency phase           |
 * | `--at-once`    | `BENCH_AT_ONCE`    | 5000     | 100      | turns of a SQL throughput phase (all at once…) |
 * | `--concurrency`| `BENCH_CONCURRENCY`| 256      | 50       | … this many running together                   |
 * | `--answers`    | `BENCH_ANSWERS`    | 200      | 10       | answers from another process, per database     |
 * | `--paused-sql` | `BENCH_PAUSED_SQL` | 100000   | 200      | paused (then resumed) turns in the SQLite child|
 * | `--sql-budget` | `BENCH_SQL_BUDGET` | 900      | 60       | seconds the SQLite child may pause, and resume |
 *
 * `--quick` (or `BENCH_QUICK=1`) picks the quick column. `--only=default,memory,sql,micro,telemetry` runs some groups of rows only
 * (default: all). PostgreSQL: `--pg-url=` or `PARLEY_BENCH_PG_URL`, else `PARLEY_TEST_PG_URL`, else
 * `postgres://parley:parley@127.0.0.1:5432/parley_test` (what `scripts/postgres.sh` starts).
 */
import { Option } from "effect"

export interface Options {
  readonly quick: boolean
  readonly turns: number
  readonly warmup: number
  readonly paused: number
  readonly rawPaused: number
  readonly pausedRss: number
  /** Seconds a pause phase may run before it stops (the row then says how many turns it reached). */
  readonly budget: number
  readonly calls: number
  readonly sqlTurns: number
  readonly atOnce: number
  readonly concurrency: number
  readonly answers: number
  readonly pausedSql: number
  readonly sqlBudget: number
  /** The groups of rows to run. */
  readonly only: ReadonlySet<Group>
  readonly pgUrl: string
}

export type Group = "default" | "memory" | "sql" | "micro" | "telemetry"

const groups: ReadonlyArray<Group> = ["default", "memory", "sql", "micro", "telemetry"]

const flag = (argv: ReadonlyArray<string>, name: string): Option.Option<string> =>
  Option.fromNullishOr(argv.find((arg) => arg.startsWith(`--${name}=`))).pipe(
    Option.map((arg) => arg.slice(name.length + 3))
  )

const size = (argv: ReadonlyArray<string>, name: string, variable: string, fallback: number): number =>
  flag(argv, name).pipe(
    Option.orElse(() => Option.fromNullishOr(process.env[variable])),
    Option.map(Number),
    Option.filter((n) => Number.isFinite(n) && n >= 0),
    Option.map(Math.floor),
    Option.getOrElse(() => fallback)
  )

/** Reads the sizes from the command line and the environment. */
export const fromArgs = (argv: ReadonlyArray<string>): Options => {
  const quick = argv.includes("--quick") || process.env.BENCH_QUICK === "1"
  const paused = size(argv, "paused", "BENCH_PAUSED", quick ? 200 : 5000)
  const turns = Math.max(1, size(argv, "turns", "BENCH_TURNS", quick ? 30 : 1000))
  return {
    quick,
    turns,
    warmup: size(argv, "warmup", "BENCH_WARMUP", quick ? 20 : 500),
    paused,
    rawPaused: size(argv, "raw-paused", "BENCH_RAW_PAUSED", paused),
    pausedRss: size(argv, "paused-rss", "BENCH_PAUSED_RSS", quick ? 0 : 100_000),
    budget: size(argv, "budget", "BENCH_BUDGET", quick ? 20 : 180),
    calls: Math.max(1, size(argv, "calls", "BENCH_CALLS", quick ? 200 : 2000)),
    sqlTurns: Math.max(1, size(argv, "sql-turns", "BENCH_SQL_TURNS", turns)),
    atOnce: Math.max(1, size(argv, "at-once", "BENCH_AT_ONCE", quick ? 100 : 5000)),
    concurrency: Math.max(1, size(argv, "concurrency", "BENCH_CONCURRENCY", quick ? 50 : 256)),
    answers: Math.max(1, size(argv, "answers", "BENCH_ANSWERS", quick ? 10 : 200)),
    pausedSql: size(argv, "paused-sql", "BENCH_PAUSED_SQL", quick ? 200 : 100_000),
    sqlBudget: size(argv, "sql-budget", "BENCH_SQL_BUDGET", quick ? 60 : 900),
    only: Option.match(flag(argv, "only"), {
      onNone: () => new Set(groups),
      onSome: (list) => new Set(groups.filter((group) => list.split(",").includes(group)))
    }),
    pgUrl: Option.getOrElse(
      Option.orElse(
        flag(argv, "pg-url"),
        () => Option.fromNullishOr(process.env.PARLEY_BENCH_PG_URL ?? process.env.PARLEY_TEST_PG_URL)
      ),
      () => "postgres://parley:parley@127.0.0.1:5432/parley_test"
    )
  }
}
