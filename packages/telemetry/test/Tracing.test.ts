/**
 * The engine's spans, exported by the OpenTelemetry SDK into an in-memory exporter: the span tree of one approval-loop
 * turn, and the link from a turn taken up by a second engine over the same SQLite file to its span in the first.
 */
import { assert, describe, it } from "@effect/vitest"
import { SpanStatusCode } from "@opentelemetry/api"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Agent, Answer, CallbackHandler, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqliteClient, SqlRuntime } from "@parley/store-sql"
import { ParleyTelemetry } from "@parley/telemetry"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Deferred, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, () => Effect.withSpan(Effect.succeed({ price: "129 EUR" }), "price-list.query"))

const pricer = Agent.make({
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  tools: [lookupPrice.spec],
  permissionMode: "ask"
})

const steps = [ScriptedModel.toolCall("lookup_price", { product: "atlas" }), ScriptedModel.text("129 EUR.")]

/** An in-memory exporter that keeps its spans when the SDK shuts down (the layer's release flushes, then shuts down). */
class KeptSpans extends InMemorySpanExporter {
  override shutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** The SDK with an in-memory exporter, as the program's tracer; the exporter to read the spans from. */
const tracing = () => {
  const exporter = new KeptSpans()
  return {
    exporter,
    layer: ParleyTelemetry.layerSdk({ serviceName: "parley-test", spanProcessor: new SimpleSpanProcessor(exporter) })
  }
}

/** A span's time (`[seconds, nanoseconds]`) in nanoseconds. */
const nanos = ([seconds, fraction]: readonly [number, number]) => BigInt(seconds) * 1_000_000_000n + BigInt(fraction)

const named = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((span) => span.name === name)
const childrenOf = (spans: ReadonlyArray<ReadableSpan>, parent: ReadableSpan) =>
  spans
    .filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
const one = (spans: ReadonlyArray<ReadableSpan>, name: string) => {
  const found = named(spans, name)
  assert.strictEqual(found.length, 1, `one ${name} span, got ${found.length}`)
  return found[0]
}

describe("tracing", () => {
  it.effect("a send repeated with its request id starts no second parley.turn span", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const engine = LocalTransport.layer.pipe(Layer.provide([
        SessionStore.layerMemory,
        Connectors.layerEmpty,
        RuntimeTools.layer(lookupPrice),
        Models.layer(Models.single((yield* ScriptedModel.make(steps)).languageModel))
      ]))
      const [first, again] = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(pricer)
        const first = yield* Session.sendMessage(session, "What does the atlas cost?", { requestId: "req-1" })
        const again = yield* Session.sendMessage(session, "What does the atlas cost?", { requestId: "req-1" })
        yield* Turn.result(again)
        return [first, again] as const
      }).pipe(
        Effect.provide(Layer.mergeAll(engine, CallbackHandler.layer({ approval: () => new Answer.AllowApproval() }))),
        Effect.provide(layer)
      )
      assert.strictEqual(again.turnId, first.turnId)
      assert.strictEqual(one(exporter.getFinishedSpans(), "parley.turn").attributes["parley.turn.id"], first.turnId)
    }))

  it.effect("an approval-loop turn is one parley.turn span: model step, callback, tool, model step", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const engine = LocalTransport.layer.pipe(Layer.provide([
        SessionStore.layerMemory,
        Connectors.layerEmpty,
        RuntimeTools.layer(lookupPrice),
        Models.layer(Models.single((yield* ScriptedModel.make(steps)).languageModel))
      ]))
      const state = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(pricer)
        return [session.id, yield* Session.run(session, "What does the atlas cost?")] as const
      }).pipe(
        Effect.provide(Layer.mergeAll(
          engine,
          CallbackHandler.layer({ approval: () => new Answer.AllowApproval() }, {
            name: "approveAll"
          })
        )),
        Effect.provide(layer)
      )
      const [sessionId, final] = state
      assert.strictEqual(final._tag, "Completed")
      const spans = exporter.getFinishedSpans()
      const turn = one(spans, "parley.turn")
      assert.isUndefined(turn.parentSpanContext, "the turn span is a root")
      assert.deepInclude(turn.attributes, {
        "parley.session.id": sessionId,
        "parley.agent.name": "pricer",
        "parley.turn.state": "Completed",
        "parley.turn.steps": 2
      })
      assert.strictEqual(turn.attributes["parley.turn.id"], final._tag === "Completed" ? final.turnId : "")

      const work = childrenOf(spans, turn)
      assert.deepStrictEqual(work.map((span) => span.name), [
        "parley.model_step",
        "parley.callback",
        "parley.tool",
        "parley.model_step"
      ])
      const [firstStep, callback, tool, secondStep] = work
      assert.strictEqual(firstStep.attributes["parley.model_step.index"], 0)
      assert.strictEqual(secondStep.attributes["parley.model_step.index"], 1)
      assert.strictEqual(firstStep.attributes["gen_ai.request.model"], "scripted")
      // The model's own span (`@effect/ai`, where a provider sets the GenAI attributes) is a child of the step.
      assert.deepStrictEqual(childrenOf(spans, firstStep).map((span) => span.name), ["LanguageModel.streamText"])
      assert.deepInclude(callback.attributes, {
        "parley.callback.kind": "approval",
        "parley.tool.id": "client.lookup_price",
        "parley.callback.resolution": "answered",
        "parley.callback.answer": "AllowApproval",
        "parley.callback.answered_by": "approveAll",
        "parley.callback.answered_by.kind": "Handler"
      })
      assert.isNumber(callback.attributes["parley.callback.wait_ms"])
      assert.deepInclude(tool.attributes, {
        "parley.tool.id": "client.lookup_price",
        "parley.tool.runs_in": "runtime",
        "parley.tool.outcome": "ok"
      })
      // The spans the tool's own code makes are children of its `parley.tool` span.
      assert.deepStrictEqual(childrenOf(spans, tool).map((span) => span.name), ["price-list.query"])
      // The memory store writes nothing (it keeps the events as values): its appends make no span. A SQL store's do
      // (below).
      assert.deepStrictEqual(named(spans, "parley.store.append"), [])
    }))

  it.effect("an append that fails has its span, with the store's error, even from the memory store", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const memory = yield* SessionStore.makeMemory
      // The memory store, except that its first append (the turn's `TurnQueued`) fails.
      let appends = 0
      const failing: SessionStore.Services = {
        ...memory,
        eventLog: {
          ...memory.eventLog,
          append: (treeId, expectedSeq, events, lease, durability) =>
            ++appends === 1
              ? new SessionStore.StoreError({ method: "append", description: "disk full" })
              : memory.eventLog.append(treeId, expectedSeq, events, lease, durability)
        }
      }
      const engine = LocalTransport.layer.pipe(Layer.provide([
        Layer.succeedContext(SessionStore.context(failing)),
        Connectors.layerEmpty,
        RuntimeTools.layer(lookupPrice),
        Models.layer(Models.single((yield* ScriptedModel.make(steps)).languageModel))
      ]))
      const sent = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(pricer)
        return yield* Effect.result(Session.sendMessage(session, "What does the atlas cost?"))
      }).pipe(Effect.provide(engine), Effect.provide(layer))
      assert.isTrue(sent._tag === "Failure", "the send fails")
      const append = one(exporter.getFinishedSpans(), "parley.store.append")
      assert.isAbove(append.attributes["parley.store.events"] as number, 0)
      assert.notProperty(append.attributes, "parley.store.bytes")
      assert.strictEqual(append.status.code, SpanStatusCode.ERROR)
      assert.include(append.status.message ?? "", "disk full")
      assert.strictEqual(
        append.parentSpanContext?.spanId,
        one(exporter.getFinishedSpans(), "parley.turn").spanContext().spanId
      )
    }))

  it.effect("a tool stopped by a cancel ends its span, interrupted, with no outcome", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const started = yield* Deferred.make<void>()
      const hang = Tool.make("hang", {
        description: "Never returns.",
        parameters: {},
        success: Schema.String
      }, () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never))
      const engine = LocalTransport.layer.pipe(Layer.provide([
        SessionStore.layerMemory,
        Connectors.layerEmpty,
        RuntimeTools.layer(hang),
        Models.layer(Models.single((yield* ScriptedModel.make([ScriptedModel.toolCall("hang", {})])).languageModel))
      ]))
      const [final, spans] = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(
          Agent.make({ name: "waiter", model: "scripted", tools: [hang.spec], permissionMode: "allow" })
        )
        const turn = yield* Session.sendMessage(session, "Wait.")
        yield* Deferred.await(started)
        yield* Session.cancel(session)
        const final = yield* Turn.result(turn)
        // Read while the engine still holds the tree: the cancel ended the tool's span, not the tree's close.
        return [final, exporter.getFinishedSpans()] as const
      }).pipe(Effect.provide(engine), Effect.provide(layer))
      assert.strictEqual(final._tag, "Cancelled")
      const tool = one(spans, "parley.tool")
      assert.strictEqual(tool.parentSpanContext?.spanId, one(spans, "parley.turn").spanContext().spanId)
      assert.strictEqual(tool.attributes["effect.fiber.interrupted"], true)
      assert.notProperty(tool.attributes, "parley.tool.outcome")
      assert.strictEqual(one(spans, "parley.turn").attributes["parley.turn.state"], "Cancelled")
    }))

  it.effect("the turn span is a child of the caller's span", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const engine = LocalTransport.layer.pipe(Layer.provide([
        SessionStore.layerMemory,
        Connectors.layerEmpty,
        RuntimeTools.layer(lookupPrice),
        Models.layer(Models.single((yield* ScriptedModel.make([ScriptedModel.text("Hello.")])).languageModel))
      ]))
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(Agent.make({ name: "greeter", instructions: "Greet." }))
        yield* Session.run(session, "Hi").pipe(Effect.withSpan("request"))
      }).pipe(Effect.provide(engine), Effect.provide(layer))
      const spans = exporter.getFinishedSpans()
      const turn = one(spans, "parley.turn")
      assert.strictEqual(turn.parentSpanContext?.spanId, one(spans, "request").spanContext().spanId)
      assert.strictEqual(turn.attributes["parley.turn.steps"], 1)
    }))

  it.effect("a subagent's turn span is a child of the turn that spawned it", () =>
    Effect.gen(function*() {
      const { exporter, layer } = tracing()
      const helper = Agent.make({ name: "helper", instructions: "Say hello." })
      const parent = Agent.make({ name: "parent", model: "scripted", permissionMode: "allow", subagents: [helper] })
      const parentModel = yield* ScriptedModel.fromFunction((call) => {
        const results = ScriptedModel.toolResults(call)
        const spawned = results.find((result) => result.name === "agents_spawn")
        if (spawned === undefined) return ScriptedModel.toolCall("agents_spawn", { agent: "helper", task: "Hello." })
        const waited = results.find((result) => result.name === "agents_wait")
        if (waited === undefined) {
          return ScriptedModel.toolCall("agents_wait", {
            sessionIds: [(spawned.result as { readonly sessionId: string }).sessionId]
          })
        }
        return ScriptedModel.text("The helper said hello.")
      })
      const helperModel = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello."))
      const state = yield* Agent.run(parent, "Go").pipe(
        Effect.provide(LocalTransport.layer.pipe(Layer.provide([
          SessionStore.layerMemory,
          Connectors.layerEmpty,
          RuntimeTools.layerEmpty,
          Models.layer(Models.byAgent({ parent: parentModel.languageModel, helper: helperModel.languageModel }))
        ]))),
        Effect.provide(layer)
      )
      assert.strictEqual(state._tag, "Completed")
      const turns = named(exporter.getFinishedSpans(), "parley.turn")
      const root = turns.find((span) => span.attributes["parley.agent.name"] === "parent")
      const child = turns.find((span) => span.attributes["parley.agent.name"] === "helper")
      if (root === undefined || child === undefined) return assert.fail(`turn spans: ${turns.length}`)
      assert.strictEqual(child.parentSpanContext?.spanId, root.spanContext().spanId)
      assert.strictEqual(child.attributes["parley.turn.state"], "Completed")
    }))

  it.effect("a turn answered from a second engine over the same SQLite file links its span to the first", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-tracing-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const filename = path.join(dir, "sessions.db")
      const { exporter, layer } = tracing()
      const engine = (steps: ReadonlyArray<ScriptedModel.Step>) =>
        SqlRuntime.layerSqlite({ filename, tools: [lookupPrice] }).pipe(Layer.provide(ScriptedModel.layer(steps)))

      // One tracer for the test process (both engines export through it).
      const blocked = yield* Effect.gen(function*() {
        // The first engine accepts the turn; it stops at the approval, which nobody there answers.
        const blocked = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(pricer)
          return yield* Session.run(session, "What does the atlas cost?")
        }).pipe(Effect.provide(engine([steps[0]])))
        if (blocked._tag !== "Blocked") return assert.fail(`the turn is ${blocked._tag}`)

        // The second engine answers it by id and runs the rest of the turn.
        const final = yield* Effect.gen(function*() {
          const session = yield* Agent.session(pricer, blocked.sessionId)
          const turn = yield* Session.turn(session, blocked.turnId)
          yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
          return yield* Turn.result(turn, { after: blocked })
        }).pipe(Effect.provide(engine([steps[1]])))
        assert.strictEqual(final._tag, "Completed")
        return blocked
      }).pipe(Effect.provide(layer))

      const turns = named(exporter.getFinishedSpans(), "parley.turn")
      const first = turns.find((span) => span.attributes["parley.turn.resumed"] === undefined)
      const second = turns.find((span) => span.attributes["parley.turn.resumed"] === true)
      if (first === undefined || second === undefined) return assert.fail(`turn spans: ${turns.length}`)
      assert.strictEqual(first.attributes["parley.turn.suspended"], true)
      assert.strictEqual(second.attributes["parley.turn.state"], "Completed")
      assert.strictEqual(second.attributes["parley.turn.id"], blocked.turnId)
      assert.deepStrictEqual(second.links.map((link) => link.context.spanId), [first.spanContext().spanId])
      assert.deepStrictEqual(second.links.map((link) => link.context.traceId), [first.spanContext().traceId])
      // The answer given there is an event of the second engine's turn span, with who gave it.
      const resolved = second.events.find((event) => event.name === "parley.callback.resolved")
      assert.strictEqual(resolved?.attributes?.["parley.callback.resolution"], "answered")

      // The first engine's appends (the log's first events, under its turn span) report the bytes SQLite holds for
      // them: their events' JSON text, in UTF-8.
      const appends = childrenOf(exporter.getFinishedSpans(), first).filter((span) =>
        span.name === "parley.store.append"
      )
      assert.isAtLeast(appends.length, 2)
      for (const append of appends) {
        // Each from the append's start to its end, inside the turn.
        assert.isTrue(nanos(append.startTime) >= nanos(first.startTime), "starts in its turn")
        assert.isTrue(nanos(append.endTime) >= nanos(append.startTime), "ends after it starts")
        assert.isTrue(nanos(append.endTime) <= nanos(first.endTime), "ends in its turn")
      }
      const sum = (key: string) => appends.reduce((total, span) => total + (span.attributes[key] as number), 0)
      const [stored] = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ readonly bytes: number }>`SELECT SUM(LENGTH(CAST(event AS BLOB))) AS bytes
          FROM parley_events WHERE tree_id = ${blocked.sessionId} AND seq < ${sum("parley.store.events")}`
      }).pipe(Effect.provide(SqliteClient.layer({ filename })))
      assert.strictEqual(sum("parley.store.bytes"), stored.bytes)
    }))
})
