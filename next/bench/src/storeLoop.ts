/**
 * One latency phase of the approval loop on one store, alone: for CPU profiles of a store (`main.ts` runs every
 * phase). Prints p50 / p99 / mean per turn, turns/s and, on a SQL store, what each turn stored.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --conditions=@parley/source --import tsx bench/src/storeLoop.ts \
 *     sqlite A 1000        # store: memory | sqlite | sqlite-normal | pg; variant A | B; turns (after 50 warm-up)
 *     sqlite B 1000 default scripted   # … engine: tuned (default) | default (the engine's own options); model
 *   npx tsx bench/src/cpuprofile.ts "$(ls -S /tmp/prof/*.cpuprofile | head -1)" 30
 *
 * PostgreSQL: `PARLEY_BENCH_PG_URL`, else `PARLEY_TEST_PG_URL`, else the URL `scripts/postgres.sh` sets up.
 */
import { Cause, Console, Effect, Exit, Option } from "effect"
import { rawDouble, scripted } from "./models.js"
import { latency, tuned, type Variant } from "./phases.js"
import * as Stores from "./stores.js"

const pgUrl = process.env.PARLEY_BENCH_PG_URL ?? process.env.PARLEY_TEST_PG_URL ??
  "postgres://parley:parley@127.0.0.1:5432/parley_test"

const stores: Record<string, Stores.BenchStore> = {
  memory: Stores.memory,
  sqlite: Stores.sqlite(),
  "sqlite-normal": Stores.sqlite({ synchronous: "normal" }),
  pg: Stores.pg(pgUrl)
}

const program = Effect.gen(function*() {
  const [storeName = "sqlite", variantName = "A", turnsText = "1000", engineName = "tuned", modelName = "raw"] = process
    .argv.slice(2)
  const model = modelName === "scripted" ? scripted : rawDouble
  const store = stores[storeName]
  if (store === undefined) return yield* Effect.fail(new Error(`no store ${storeName}: ${Object.keys(stores)}`))
  const variant: Variant = variantName === "B" ? "B" : "A"
  const result = yield* latency({
    model,
    variant,
    turns: Number(turnsText),
    warmup: 50,
    store,
    engine: engineName === "default" ? {} : tuned
  })
  const at = (p: number) => result.samples[Math.min(result.samples.length - 1, Math.floor(p * result.samples.length))]
  const mean = result.samples.reduce((sum, sample) => sum + sample, 0) / result.samples.length
  yield* Console.log(
    `${store.name} · ${model.name} · ${engineName} engine · variant ${variant} · ${result.samples.length} turns: ` +
      `p50 ${at(0.5).toFixed(3)} ms, ` +
      `p99 ${at(0.99).toFixed(3)} ms, mean ${mean.toFixed(3)} ms, ${result.turnsPerSecond.toFixed(0)} turns/s`
  )
  if (Option.isSome(result.stored)) {
    const stored = result.stored.value
    yield* Console.log(
      `per turn: ${stored.transactionsPerTurn.toFixed(2)} write transactions (${
        stored.syncedPerTurn.toFixed(2)
      } synced), ${(stored.bytesPerTurn / 1024).toFixed(2)} KB, ${stored.eventsPerTurn.toFixed(1)} events`
    )
  }
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
})
