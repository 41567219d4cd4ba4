/**
 * The sizes of a bench run: `--quick` (small sizes, for CI) or full, each size overridable by a flag
 * (`--turns=200`) or an environment variable (`BENCH_TURNS=200`); a flag wins over the variable.
 *
 * | flag           | variable           | full     | quick    | what                                           |
 * |----------------|--------------------|----------|----------|------------------------------------------------|
 * | `--turns`      | `BENCH_TURNS`      | 1000     | 30       | measured turns per latency phase               |
 * | `--warmup`     | `BENCH_WARMUP`     | 50       | 20       | unmeasured turns before each latency phase     |
 * | `--paused`     | `BENCH_PAUSED`     | 5000     | 200      | turns paused at once (pause / resume phase)    |
 * | `--raw-paused` | `BENCH_RAW_PAUSED` | =paused  | =paused  | the same with the raw model double (0: skip)   |
 * | `--paused-rss` | `BENCH_PAUSED_RSS` | 100000   | 0        | paused turns in the RSS child process (0: skip)|
 * | `--budget`     | `BENCH_BUDGET`     | 180      | 20       | seconds a pause phase may take before it stops |
 * | `--calls`      | `BENCH_CALLS`      | 2000     | 200      | calls per bare `streamText` microbench         |
 *
 * `--quick` (or `BENCH_QUICK=1`) picks the quick column.
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
}

const flag = (argv: ReadonlyArray<string>, name: string): Option.Option<string> =>
  Option.fromNullable(argv.find((arg) => arg.startsWith(`--${name}=`))).pipe(
    Option.map((arg) => arg.slice(name.length + 3))
  )

const size = (argv: ReadonlyArray<string>, name: string, variable: string, fallback: number): number =>
  flag(argv, name).pipe(
    Option.orElse(() => Option.fromNullable(process.env[variable])),
    Option.map(Number),
    Option.filter((n) => Number.isFinite(n) && n >= 0),
    Option.map(Math.floor),
    Option.getOrElse(() => fallback)
  )

/** Reads the sizes from the command line and the environment. */
export const fromArgs = (argv: ReadonlyArray<string>): Options => {
  const quick = argv.includes("--quick") || process.env.BENCH_QUICK === "1"
  const paused = size(argv, "paused", "BENCH_PAUSED", quick ? 200 : 5000)
  return {
    quick,
    turns: Math.max(1, size(argv, "turns", "BENCH_TURNS", quick ? 30 : 1000)),
    warmup: size(argv, "warmup", "BENCH_WARMUP", quick ? 20 : 50),
    paused,
    rawPaused: size(argv, "raw-paused", "BENCH_RAW_PAUSED", paused),
    pausedRss: size(argv, "paused-rss", "BENCH_PAUSED_RSS", quick ? 0 : 100_000),
    budget: size(argv, "budget", "BENCH_BUDGET", quick ? 20 : 180),
    calls: Math.max(1, size(argv, "calls", "BENCH_CALLS", quick ? 200 : 2000))
  }
}
