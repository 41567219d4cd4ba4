import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, CallbackHandler, Permissions, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Cause, Effect, Exit, Layer, Schema, Stream } from "effect"

// A hardened agent loop: a model that keeps calling tools is stopped, the event loop keeps running while a fast model
// loops, a handler that fails is a typed error that leaves its callback open, and a definition that gives both a
// policy and a permission mode does not start.

const counter = Tool.make("count", {
  description: "Counts.",
  parameters: { n: Schema.Number },
  success: Schema.Struct({ next: Schema.Number })
}, ({ n }) => ({ next: n + 1 }))

/** Calls `count` forever. */
const loopingBrain = (call: ScriptedModel.Call): ScriptedModel.Reply =>
  ScriptedModel.toolCall("count", { n: ScriptedModel.toolResults(call).length })

const runtime = (brain: (call: ScriptedModel.Call) => ScriptedModel.Reply) =>
  Layer.unwrap(Effect.map(ScriptedModel.fromFunction(brain), (model) =>
    LocalTransport.layer.pipe(
      Layer.provide([
        SessionStore.layerMemory,
        Connectors.layerEmpty,
        RuntimeTools.layerEmpty,
        Models.layer(Models.single(model.languageModel))
      ])
    )))

describe("the agent loop", () => {
  it.effect("a model that keeps calling tools is stopped at maxSteps: the turn ends Failed with StepLimitReached", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "looper", model: "scripted", tools: [counter], maxSteps: 7 })
      const state = yield* Agent.run(agent, "count")
      assert.strictEqual(state._tag, "Failed")
      if (state._tag !== "Failed") return
      assert.strictEqual(state.error._tag, "StepLimitReached")
      assert.include(state.error.message, "7 model steps")
      const turn = yield* Session.turn(yield* Agent.session(agent, state.sessionId), state.turnId)
      const events = yield* Stream.runCollect(Turn.events(turn))
      assert.strictEqual(events.filter((event) => event._tag === "ModelStepStarted").length, 7)
      assert.strictEqual(events.filter((event) => event._tag === "ToolCallCompleted").length, 7)
    }).pipe(Effect.provide(runtime(loopingBrain))))

  it.live("timers fire while a fast model loops: the runtime yields to the event loop between steps", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "looper", model: "scripted", tools: [counter], maxSteps: 60 })
      let ticks = 0
      const interval = setInterval(() => ticks++, 0)
      const state = yield* Agent.run(agent, "count").pipe(Effect.ensuring(Effect.sync(() => clearInterval(interval))))
      assert.strictEqual(state._tag, "Failed")
      assert.isAbove(ticks, 0, "a setInterval callback ran while the turn looped")
    }).pipe(Effect.provide(runtime(loopingBrain))))

  it.effect("a handler that throws fails Turn.result with HandlerFailed; the callback stays open for another answer", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "asker", model: "scripted", tools: [counter], permissionMode: "ask" })
      const session = yield* Agent.startSession(agent)
      const turn = yield* Session.sendMessage(session, "count once")
      const failing = CallbackHandler.layer({
        approval: () => {
          throw new Error("the approval service is down")
        }
      })
      const error = yield* Effect.flip(Turn.result(turn).pipe(Effect.provide(failing)))
      assert.strictEqual(error._tag, "HandlerFailed")
      assert.include(error.message, "the approval service is down")
      const open = yield* Turn.openCallbacks(turn)
      assert.deepStrictEqual(open.map((callback) => callback.kind), ["approval"])
      // A later wait with a working handler answers it; the first allowed call gets the next one approved too.
      const state = yield* Turn.result(turn).pipe(
        Effect.provide(CallbackHandler.layer({ approval: () => new Answer.DenyApproval({ reason: "enough" }) }))
      )
      assert.strictEqual(state._tag, "Completed")
    }).pipe(Effect.provide(runtime((call) =>
      ScriptedModel.toolResults(call).length === 0
        ? ScriptedModel.toolCall("count", { n: 0 })
        : ScriptedModel.text("Done.")
    ))))

  it.effect("a handler that dies is a HandlerFailed too, never a defect", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "asker", model: "scripted", tools: [counter], permissionMode: "ask" })
      const exit = yield* Agent.run(agent, "count once").pipe(
        Effect.provide(CallbackHandler.layer({ approval: () => Effect.die("boom") })),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const [reason] = exit.cause.reasons
        const failure = exit.cause.reasons.length === 1 && Cause.isFailReason(reason) ? reason.error : undefined
        assert.strictEqual(failure?._tag, "HandlerFailed")
      }
    }).pipe(Effect.provide(runtime(() => ScriptedModel.toolCall("count", { n: 0 })))))

  it.effect("a tool name the model invents is a tool error the model recovers from, not the end of the turn", () =>
    Effect.gen(function*() {
      const agent = Agent.make({ name: "inventor", model: "scripted", tools: [counter] })
      const state = yield* Agent.run(agent, "count")
      assert.strictEqual(state._tag, "Completed")
      if (state._tag !== "Completed") return
      assert.strictEqual(state.text, "Sorry: There is no tool named teleport.")
      const turn = yield* Session.turn(yield* Agent.session(agent, state.sessionId), state.turnId)
      const events = yield* Stream.runCollect(Turn.events(turn))
      const completed = events.filter((event) => event._tag === "ToolCallCompleted")
      assert.deepStrictEqual(completed.map((event) => [event.name, event.isFailure]), [["teleport", true]])
    }).pipe(Effect.provide(runtime((call) => {
      const results = ScriptedModel.toolResults(call)
      return results.length === 0
        ? ScriptedModel.toolCall("teleport", { to: "Lyon" })
        : ScriptedModel.text(`Sorry: ${String(results[0].result)}`)
    }))))

  it.effect("permissions and permissionMode together are refused when a session would start", () =>
    Effect.gen(function*() {
      const options = {
        name: "both",
        model: "scripted",
        permissions: new Permissions.PermissionPolicy({ default: "allow" }),
        permissionMode: "ask"
      } as unknown as Agent.Options
      const agent = Agent.make(options)
      const error = yield* Effect.flip(Agent.startSession(agent))
      assert.strictEqual(error._tag, "AgentInvalid")
      assert.include(error.message, "permissions and permissionMode are both given")
    }).pipe(Effect.provide(runtime(() => ScriptedModel.text("hi")))))
})
