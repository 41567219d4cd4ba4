/**
 * The approval loop alone, for a profile: `turns` turns of variant A (a `CallbackHandler` approves while
 * `Session.run` waits), each in a new session started outside the timer, over the in-memory store, with the raw
 * model double (`raw`, default) or `ScriptedModel` (`scripted`). Every turn is checked; the p50 of each round of
 * `turns / rounds` turns is printed (the first rounds warm the JIT up).
 *
 * ```sh
 * node --cpu-prof --cpu-prof-dir=/tmp/prof --conditions=@parley/source --import tsx bench/src/loop.ts raw 8000
 * npx tsx bench/src/cpuprofile.ts "$(ls -S /tmp/prof/*.cpuprofile | head -1)" 30
 * ```
 */
import type { LanguageModel } from "@effect/ai"
import { Agent, Session } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { Cause, Console, Effect, Exit } from "effect"
import { makeRawDouble, scripted } from "./models.js"
import { runtime } from "./phases.js"
import { approveAll, checkCompleted, Ledger, makeAgent, message } from "./workload.js"

const rounds = 8

const program = Effect.gen(function*() {
  const which = process.argv[2] === "scripted" ? "scripted" : "raw"
  const turns = Math.max(rounds, Number(process.argv[3] ?? 8000) || 8000)
  const ledger = new Ledger()
  const agent = makeAgent(ledger)
  const model: LanguageModel.Service = which === "raw" ? makeRawDouble(ledger) : yield* scripted.make(ledger)
  yield* Effect.gen(function*() {
    for (let round = 0; round < rounds; round++) {
      const samples: Array<number> = []
      for (let i = 0; i < Math.floor(turns / rounds); i++) {
        const session = yield* Agent.startSession(agent)
        ledger.open(session.id)
        const started = performance.now()
        const state = yield* Session.run(session, message(session.id))
        samples.push(performance.now() - started)
        yield* checkCompleted(ledger, "loop", session, state)
      }
      samples.sort((a, b) => a - b)
      yield* Console.log(`round ${round + 1}/${rounds}: p50 ${samples[samples.length >> 1].toFixed(3)} ms`)
    }
  }).pipe(Effect.provide(approveAll(ledger)), Effect.provide(runtime(model, SessionStore.layerMemory)))
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
})
