/**
 * The engine's metrics: counted for a traced program, by the tree's owner; nothing for a program without a tracer.
 */
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Agent, Answer, CallbackHandler, Session } from "@parley/core"
import { Connectors, EngineTelemetry, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ParleyTelemetry } from "@parley/telemetry"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Effect, Layer, Metric, Schema } from "effect"

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, () => Effect.succeed({ price: "129 EUR" }))

const pricer = Agent.make({
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  tools: [lookupPrice.spec],
  permissionMode: "ask"
})

/** One approval-loop turn, approved by a handler. */
const approvalLoop = Effect.gen(function*() {
  const model = yield* ScriptedModel.make([
    ScriptedModel.toolCall("lookup_price", { product: "atlas" }),
    ScriptedModel.text("129 EUR.")
  ])
  const engine = LocalTransport.layer.pipe(Layer.provide([
    SessionStore.layerMemory,
    Connectors.layerEmpty,
    RuntimeTools.layer(lookupPrice),
    Models.layer(Models.single(model.languageModel))
  ]))
  return yield* Effect.gen(function*() {
    const session = yield* Agent.startSession(pricer)
    return yield* Session.run(session, "What does the atlas cost?")
  }).pipe(
    Effect.provide(Layer.mergeAll(engine, CallbackHandler.layer({ approval: () => new Answer.AllowApproval() })))
  )
})

/** The engine's metrics now (the registry is the process's: tests compare differences). */
const metrics = Effect.all({
  completed: Effect.map(
    Metric.value(Metric.withAttributes(EngineTelemetry.turns, { "parley.turn.state": "Completed" })),
    (state) => state.count
  ),
  modelSteps: Effect.map(Metric.value(EngineTelemetry.modelSteps), (state) => state.count),
  toolRuns: Effect.map(Metric.value(EngineTelemetry.toolRuns), (state) => state.count),
  waits: Effect.map(Metric.value(EngineTelemetry.callbackWait), (state) => state.count),
  open: Effect.map(Metric.value(EngineTelemetry.callbacksOpen), (state) => state.count)
})

const difference = (before: Effect.Success<typeof metrics>, after: Effect.Success<typeof metrics>) => ({
  completed: after.completed - before.completed,
  modelSteps: after.modelSteps - before.modelSteps,
  toolRuns: after.toolRuns - before.toolRuns,
  waits: after.waits - before.waits,
  open: after.open - before.open
})

describe("metrics", () => {
  // One test, sequential: both parts read the process's one registry. The program without a tracer runs first (a
  // tracer provided by a layer stays the fiber's after the layer is released).
  it.effect("a traced approval-loop turn counts a completed turn, two model steps, a tool run and one wait", () =>
    Effect.gen(function*() {
      const without = yield* metrics
      assert.strictEqual((yield* approvalLoop)._tag, "Completed")
      assert.deepStrictEqual(difference(without, yield* metrics), {
        completed: 0,
        modelSteps: 0,
        toolRuns: 0,
        waits: 0,
        open: 0
      }, "a program without a tracer counts nothing")

      const before = yield* metrics
      const state = yield* approvalLoop.pipe(Effect.provide(ParleyTelemetry.layerSdk({
        serviceName: "parley-test",
        spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter())
      })))
      assert.strictEqual(state._tag, "Completed")
      assert.deepStrictEqual(difference(before, yield* metrics), {
        completed: 1,
        modelSteps: 2,
        toolRuns: 1,
        waits: 1,
        open: 0
      })
    }))
})
