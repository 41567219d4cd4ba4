/**
 * The approval loop alone, for a profile: `turns` turns of variant A (a `CallbackHandler` approves while
 * `Session.run` waits), each in a new session started outside the timer, over the in-memory store, with the raw
 * model double (`raw`, default) or `ScriptedModel` (`scripted`). Every turn is checked; the p50 of each round of
 * `turns / rounds` turns is printed (the first rounds warm the JIT up). A third argument `traced` runs it under
 * `ParleyTelemetry.layerSdk` with every span batched into an in-memory exporter, as the bench's telemetry row does.
 *
 * ```sh
 * node --cpu-prof --cpu-prof-dir=/tmp/prof --conditions=@parley/source --import tsx bench/src/loop.ts raw 8000
 * node --cpu-prof --cpu-prof-dir=/tmp/prof --conditions=@parley/source --import tsx bench/src/loop.ts raw 8000 traced
 * npx tsx bench/src/cpuprofile.ts "$(ls -S /tmp/prof/*.cpuprofile | head -1)" 30
 * ```
 */
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Agent, Session } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { ParleyTelemetry } from "@parley/telemetry"
import { Cause, Console, Effect, Exit, Layer } from "effect"
import type { LanguageModel } from "effect/ai"
import { makeRawDouble, scripted } from "./models.js"
import { runtime } from "./phases.js"
import { CountedSpans } from "./telemetryPairs.js"
import { approveAll, checkCompleted, Ledger, makeAgent, message } from "./workload.js"

const rounds = 8

const program = Effect.gen(function*() {
  const which = process.argv[2] === "scripted" ? "scripted" : "raw"
  const turns = Math.max(rounds, Number(process.argv[3] ?? 8000) || 8000)
  const tracing = process.argv[4] === "traced"
    ? ParleyTelemetry.layerSdk({
      serviceName: "parley-loop",
      spanProcessor: new BatchSpanProcessor(new CountedSpans())
    })
    : Layer.empty
  const ledger = new Ledger()
  const agent = makeAgent(ledger)
  const model: LanguageModel.LanguageModel = which === "raw" ? makeRawDouble(ledger) : yield* scripted.make(ledger)
  yield* Effect.gen(function*() {
    for (let round = 0; round < rounds; round++) {
      const samples: Array<number> = []
      const cpu = process.cpuUsage()
      for (let i = 0; i < Math.floor(turns / rounds); i++) {
        const session = yield* Agent.startSession(agent)
        ledger.open(session.id)
        const started = performance.now()
        const state = yield* Session.run(session, message(session.id))
        samples.push(performance.now() - started)
        yield* checkCompleted(ledger, "loop", session, state)
      }
      samples.sort((a, b) => a - b)
      const used = process.cpuUsage(cpu)
      const perTurn = (used.user + used.system) / 1000 / samples.length
      yield* Console.log(
        `round ${round + 1}/${rounds}: p50 ${samples[samples.length >> 1].toFixed(3)} ms, CPU ${
          perTurn.toFixed(3)
        } ms/turn`
      )
    }
  }).pipe(
    Effect.provide(approveAll(ledger)),
    Effect.provide(runtime(model, SessionStore.layerMemory)),
    Effect.provide(tracing)
  )
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
})
