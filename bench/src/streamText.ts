/**
 * Microbench: one bare `streamText` call, drained, as the engine makes it (the `lookup_price` toolkit built once,
 * `disableToolCallResolution: true`, a two-message prompt), through three models:
 *
 * - `scripted`: `ScriptedModel.fromFunction`, answering with the `lookup_price` call;
 * - `make`: a model built with `effect/ai`'s `LanguageModel.make` over a provider that streams the same encoded
 *   parts (what any provider built on `make` pays per call);
 * - `raw`: the hand-written `LanguageModel.LanguageModel` double (no schema work at all).
 *
 * Each call is checked (one `tool-call` part for `lookup_price`). Run alone to profile one model:
 * `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/src/streamText.ts scripted 5000`, then
 * `npx tsx bench/src/cpuprofile.ts /tmp/prof/<file>.cpuprofile`.
 */
import { ScriptedModel } from "@parley/testing"
import { Cause, Console, Effect, Exit, Schema, Stream } from "effect"
import { LanguageModel, Prompt, Response, Toolkit } from "effect/ai"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { LookupPrice, makeRawDouble } from "./models.js"
import { CheckFailed, Ledger, PRODUCT } from "./workload.js"

/** The engine's kind of toolkit: the tools only; their calls are run by the engine, never by `effect/ai`. */
const toolkit: Toolkit.WithHandler<{ readonly lookup_price: typeof LookupPrice }> = {
  tools: Toolkit.make(LookupPrice).tools,
  handle: (name) => Effect.die(`the engine runs tool calls itself (${String(name)})`)
}

const prompt = Prompt.make([
  { role: "system", content: "Answer with the price." },
  { role: "user", content: `What does the ${PRODUCT} cost?` }
])

const encodedParts: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "response-metadata", id: "resp_1", modelId: "make" },
  { type: "tool-call", id: "call_1", name: "lookup_price", params: { product: PRODUCT } },
  { type: "finish", reason: "tool-calls", usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } } }
]

export type MicroModel = "scripted" | "make" | "raw"

export const microModels: ReadonlyArray<MicroModel> = ["scripted", "make", "raw"]

export const describeModel = (model: MicroModel): string => {
  switch (model) {
    case "scripted":
      return "ScriptedModel"
    case "make":
      return "LanguageModel.make"
    case "raw":
      return "raw double"
  }
}

const build = (model: MicroModel): Effect.Effect<LanguageModel.LanguageModel> => {
  switch (model) {
    case "scripted":
      return Effect.map(
        ScriptedModel.fromFunction(() => ScriptedModel.toolCall("lookup_price", { product: PRODUCT })),
        (scripted) => scripted.languageModel
      )
    case "make":
      return LanguageModel.make({
        generateText: () => Effect.die(new Error("the microbench only streams")),
        streamText: () => Stream.fromIterable(encodedParts)
      })
    case "raw":
      return Effect.sync(() => makeRawDouble(new Ledger()))
  }
}

const call = (model: LanguageModel.LanguageModel, name: MicroModel) =>
  Effect.flatMap(
    Stream.runCollect(model.streamText({ prompt, toolkit, disableToolCallResolution: true })),
    (parts) =>
      parts.filter((part) => part.type === "tool-call" && part.name === "lookup_price").length === 1
        ? Effect.void
        : Effect.fail(
          new CheckFailed({
            phase: `streamText (${name})`,
            sessionId: "-",
            detail: `expected one lookup_price call, got parts ${parts.map((part) => part.type)}`
          })
        )
  )

/** Microseconds per call: wall-clock, and CPU time of the process (less sensitive to other processes' load). */
export interface PerCall {
  readonly wall: number
  readonly cpu: number
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** Runs `once` `calls` times after a tenth as many unmeasured runs, in 5 batches: the medians of the batch means. */
const time = <E>(once: Effect.Effect<unknown, E>, calls: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < Math.max(10, Math.floor(calls / 10)); i++) yield* once
    const batch = Math.max(1, Math.floor(calls / 5))
    const wall: Array<number> = []
    const cpu: Array<number> = []
    for (let b = 0; b < 5; b++) {
      const started = performance.now()
      const startedCpu = process.cpuUsage()
      for (let i = 0; i < batch; i++) yield* once
      const usedCpu = process.cpuUsage(startedCpu)
      wall.push(((performance.now() - started) * 1000) / batch)
      cpu.push((usedCpu.user + usedCpu.system) / batch)
    }
    const result: PerCall = { wall: median(wall), cpu: median(cpu) }
    return result
  })

export interface MicroResult extends PerCall {
  readonly model: MicroModel
  readonly calls: number
}

/** One bare `streamText` call through `name`, drained and checked. */
export const measure = (name: MicroModel, calls: number) =>
  Effect.gen(function*() {
    const model = yield* build(name)
    const perCall = yield* time(call(model, name), calls)
    const result: MicroResult = { ...perCall, model: name, calls }
    return result
  })

/**
 * The schema work `LanguageModel.make`'s `streamText` does on every call with this toolkit: build
 * `Response.StreamPart(toolkit)`, then also compile its decoder (`Schema.decodeEffect(Schema.NonEmptyArray(...))`).
 */
export const measureSchemaWork = (calls: number) =>
  Effect.gen(function*() {
    const build = yield* time(Effect.sync(() => Response.StreamPart(toolkit)), calls)
    const compile = yield* time(
      Effect.sync(() => Schema.decodeEffect(Schema.NonEmptyArray(Response.StreamPart(toolkit)))),
      calls
    )
    return { build, compile }
  })

// ----------------------------------------------------------------------------
// Alone: `streamText.ts [scripted|make|raw] [calls]`
// ----------------------------------------------------------------------------

const isEntry = process.argv[1] !== undefined &&
  pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url

if (isEntry) {
  const name = microModels.find((model) => model === process.argv[2]) ?? "scripted"
  const calls = Number(process.argv[3] ?? 2000)
  Effect.runPromiseExit(
    Effect.flatMap(
      measure(name, calls),
      (result) =>
        Console.log(
          `${describeModel(name)} streamText: ${result.wall.toFixed(1)} µs per call (CPU ${result.cpu.toFixed(1)} µs)`
        )
    )
  ).then((exit) => {
    if (Exit.isFailure(exit)) {
      console.error(Cause.pretty(exit.cause))
      process.exitCode = 1
    }
  })
}
