/**
 * Benchmarks of the in-process runtime (LocalTransport over the memory store, a scripted model):
 *
 * - answer → turn ended: from `Turn.answer` on an open approval to the turn's `TurnEnded` (through a client tool call
 *   a handler answers and a second model step), sequentially;
 * - paused turns: heap per turn blocked on an approval (after a forced GC; run with `--expose-gc`).
 *
 * Usage: `npm run bench -w @parley/bench` (set BENCH_TURNS / BENCH_PAUSED to change the sizes).
 */
import { Agent, Answer, CallbackHandler, Permissions, Session, ToolSpec, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
import * as ScriptedModel from "@parley/testing/ScriptedModel"
import { Effect, Layer } from "effect"

const turns = Number(process.env.BENCH_TURNS ?? 500)
const paused = Number(process.env.BENCH_PAUSED ?? 5000)

const deploy = new ToolSpec.ToolSpec({
  id: "client.deploy" as ToolSpec.ToolSpec["id"],
  name: "deploy",
  description: "Deploy.",
  parameters: { type: "object", properties: {} }
})

const agent = Agent.make({
  name: "bench",
  model: "scripted",
  tools: [deploy],
  permissions: new Permissions.PermissionPolicy({ default: "ask" })
})

// Ask for deploy; once it has a result, answer.
const brain = (call: ScriptedModel.Call) =>
  ScriptedModel.toolResults(call).length === 0 ? ScriptedModel.toolCall("deploy", {}) : ScriptedModel.text("Done.")

const Runtime = Layer.unwrapEffect(Effect.map(ScriptedModel.fromFunction(brain), (model) =>
  LocalTransport.layer.pipe(
    Layer.provide([SessionStore.layerMemory, Connectors.layerEmpty, Models.layer(Models.single(model.languageModel))])
  )))

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]

const gc = () => (globalThis as { gc?: () => void }).gc?.()
const heap = () => {
  gc()
  return process.memoryUsage().heapUsed
}

const latency = Effect.gen(function*() {
  const samples: Array<number> = []
  for (let i = 0; i < turns; i++) {
    const session = yield* Agent.startSession(agent)
    const blocked = yield* Session.run(session, "Deploy")
    if (blocked._tag !== "Blocked") return yield* Effect.dieMessage(`expected Blocked, got ${blocked._tag}`)
    const turn = yield* Session.turn(session, blocked.turnId)
    const start = performance.now()
    yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
    // The client tool call that follows is answered by the handler while the result waits.
    const ended = yield* Turn.result(turn, { after: blocked }).pipe(
      Effect.provide(CallbackHandler.layer({ clientTool: () => Answer.ClientToolResult.success({}) }))
    )
    if (ended._tag !== "Completed") return yield* Effect.dieMessage(`expected Completed, got ${ended._tag}`)
    samples.push(performance.now() - start)
  }
  samples.sort((a, b) => a - b)
  console.log(
    `answer -> turn ended (${turns} turns, sequential): median ${percentile(samples, 0.5).toFixed(2)} ms, ` +
      `p90 ${percentile(samples, 0.9).toFixed(2)} ms, p99 ${percentile(samples, 0.99).toFixed(2)} ms`
  )
})

const memory = Effect.gen(function*() {
  const before = heap()
  const started = performance.now()
  for (let i = 0; i < paused; i++) {
    const session = yield* Agent.startSession(agent)
    yield* Session.run(session, "Deploy")
    if ((i + 1) % 1000 === 0) console.log(`  paused ${i + 1}/${paused} turns`)
  }
  const elapsed = performance.now() - started
  const after = heap()
  console.log(
    `paused turns: ${paused} blocked on an approval in ${(elapsed / 1000).toFixed(1)} s; ` +
      `heap +${((after - before) / 1024 / 1024).toFixed(1)} MB (${
        ((after - before) / paused / 1024).toFixed(1)
      } KB each)`
  )
})

Effect.runPromise(Effect.all([latency, memory], { discard: true }).pipe(Effect.provide(Runtime)))
