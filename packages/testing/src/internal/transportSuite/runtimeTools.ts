/**
 * Tools the runtime runs (issue 9): a tool whose handler the runtime was given is answered inside the engine —
 * `ToolExecutionStarted`, then `ToolCallCompleted` — with no client waiting and no callback opened. The permission
 * policy still applies first; a typed failure of the handler is a failure result the model sees, a defect ends the
 * turn `Failed`; a client's own handler for the same tool never runs; a tool marked to run in the runtime whose
 * handler the runtime lacks gets a failure result saying so (never a hang); subagents' tools are marked too.
 *
 * Every wait is bounded in real time (`within`): a turn waiting on a callback nobody answers fails the scenario.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import { Builtins } from "@parley/core/AgentSpec"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import { ToolSpec } from "@parley/core/ToolSpec"
import * as Transport from "@parley/core/Transport"
import * as Turn from "@parley/core/Turn"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Tool from "@parley/tools/Tool"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ScriptedModel from "../../ScriptedModel.js"
import { kinds, logOf, ofTag, stateAs, toolCompleted, within } from "./assertions.js"
import { allow } from "./fixtures.js"
import type { WithModel } from "./harness.js"
import { delegateBrain, found, treeModel, turnResults } from "./treeAgents.js"

// =============================================================================
// Fixtures
// =============================================================================

const PRICES: Record<string, string> = { atlas: "1,200 EUR", nova: "850 EUR" }
const ATLAS = "What does the Atlas cost?"
const ATLAS_ANSWER = "The Atlas costs 1,200 EUR."
const ZEPHYR = "What does the Zephyr cost?"
const NO_ZEPHYR = "There is no product named Zephyr."

/** How many times a handler ran. */
interface Runs {
  count: number
}

const runs = (): Runs => ({ count: 0 })

/** `lookup_price` with a handler that counts its runs; an unknown product is its typed failure. */
const priceTool = (counter: Runs) =>
  Tool.make("lookup_price", {
    description: "Price of one product.",
    parameters: { product: Schema.String },
    success: Schema.Struct({ price: Schema.String })
  }, ({ product }) =>
    Effect.suspend(() => {
      counter.count++
      const price = PRICES[product.toLowerCase()]
      return price === undefined
        ? Effect.fail(`There is no product named ${product}.`)
        : Effect.succeed({ price })
    }))

/** `lookup_price` whose handler dies: a bug in the tool's code, not a failure it reports. */
const crashingTool = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, () => Effect.die(new Error("the price service crashed")))

const INSTRUCTIONS = "Look up the price of the product asked about, then answer in one sentence."

/** One agent with `lookup_price`: as a bare spec (a client with no handler) or a `Tool` (with its handler). */
const pricer = (tool: ToolSpec | Tool.Any, permissionMode: "allow" | "ask") =>
  Agent.make({ name: "pricer", model: "scripted", instructions: INSTRUCTIONS, tools: [tool], permissionMode })

/** Looks up the product named in the question, then gives its price, or the failure it got. */
const priceBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const product = /the (\w+) cost/.exec(ScriptedModel.lastUserText(call) ?? "")?.[1] ?? "?"
  const price = found(turnResults(call), "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product })
  if (price.isFailure) return ScriptedModel.text(`No price: ${String(price.result)}`)
  return ScriptedModel.text(`The ${product} costs ${(price.result as { readonly price: string }).price}.`)
}

/** The events of a turn's tool calls, in log order. */
const toolEvents = (events: ReadonlyArray<TurnEvent>) =>
  events.flatMap((event) => {
    switch (event._tag) {
      case "ToolCallStarted":
      case "ToolExecutionStarted":
      case "ToolCallCompleted":
        return [event._tag]
      case "CallbackOpened":
        return [`CallbackOpened(${event.callback.kind})`]
      case "CallbackResolved":
        return [`CallbackResolved(${event.resolution})`]
      default:
        return []
    }
  })

/** The whole log of a turn as an app that only follows `Turn.events` reads it (ends with `TurnEnded`). */
const follow = (turn: Turn.Turn) => within("Turn.events", Stream.runCollect(Turn.events(turn)))

const endState = (events: ReadonlyArray<TurnEvent>) => {
  const last = events[events.length - 1]
  assert.strictEqual(last?._tag, "TurnEnded", "the turn's events end with TurnEnded")
  return (last as Extract<TurnEvent, { _tag: "TurnEnded" }>).state
}

// ----- a tree: the desk delegates the question to a researcher, whose lookup_price runs in the runtime -----

const RESEARCHER_INSTRUCTIONS = "Call lookup_price once for your task, then answer with the product and its price."

const researcherOf = (tool: ToolSpec) =>
  Agent.make({
    name: "researcher",
    description: "Looks up one product and reports its price.",
    instructions: RESEARCHER_INSTRUCTIONS,
    tools: [tool],
    builtins: new Builtins({ subagents: false })
  })

const deskOf = (researcher: Agent.Agent) =>
  Agent.make({
    name: "desk",
    model: "scripted",
    permissionMode: "allow",
    instructions: "Start a researcher on the Atlas, wait for it, then repeat its answer.",
    subagents: [researcher]
  })

/** Prices its task (the product name). */
const researcherBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const product = ScriptedModel.lastUserText(call) ?? ""
  const price = found(turnResults(call), "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product })
  if (price.isFailure) return ScriptedModel.text(`No price: ${String(price.result)}`)
  return ScriptedModel.text(`The ${product} costs ${(price.result as { readonly price: string }).price}.`)
}

// =============================================================================
// Scenarios
// =============================================================================

export const runtimeTools = (withModel: WithModel, unprovided: "failure result" | "refused") =>
  describe("tools the runtime runs", () => {
    it.effect("an app that only follows Turn.events gets the tool answered by the runtime and the turn completes", () => {
      const counter = runs()
      const tool = priceTool(counter)
      return withModel(ScriptedModel.fromFunction(priceBrain), (model) =>
        Effect.gen(function*() {
          // The client knows the tool's spec only: no handler of its own, and nothing waits with Turn.result.
          const session = yield* Agent.startSession(pricer(tool.spec, "allow"))
          const turn = yield* Session.sendMessage(session, ATLAS)
          const events = yield* follow(turn)
          assert.strictEqual(stateAs(endState(events), "Completed").text, ATLAS_ANSWER)
          assert.strictEqual(counter.count, 1, "the handler ran once")
          assert.deepStrictEqual(ofTag(events, "CallbackOpened"), [], "no callback opened")
          const stored = events.filter((event) => event._tag !== "MessageDelta").map((event) => event._tag)
          assert.deepStrictEqual(stored, [
            "TurnQueued",
            "TurnStarted",
            "ModelStepStarted",
            "ToolCallStarted",
            "ToolExecutionStarted",
            "ToolCallCompleted",
            "ModelStepStarted",
            "MessageCompleted",
            "TurnEnded"
          ])
          const started = ofTag(events, "ToolExecutionStarted")[0]
          const completed = toolCompleted(events, "lookup_price")
          assert.strictEqual(started.toolId, "client.lookup_price")
          assert.strictEqual(started.toolCallId, completed.toolCallId)
          assert.isFalse(completed.isFailure)
          assert.deepStrictEqual(completed.result, { price: "1,200 EUR" })
          // The model got the encoded result as the tool's result.
          const calls = yield* model.calls
          assert.strictEqual(calls.length, 2)
          const seen = ScriptedModel.toolResults(calls[1])
          assert.deepStrictEqual(seen.map((result) => [result.name, result.isFailure, result.result]), [
            ["lookup_price", false, { price: "1,200 EUR" }]
          ])
        }), { runtimeTools: [tool] })
    })

    it.effect("with permission mode ask, the approval comes first and the runtime runs the tool once after it", () => {
      const counter = runs()
      const tool = priceTool(counter)
      return withModel(ScriptedModel.fromFunction(priceBrain), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(pricer(tool.spec, "ask"))
          const turn = yield* Session.sendMessage(session, ATLAS)
          const blocked = stateAs(yield* within("the turn until its approval", Turn.result(turn)), "Blocked")
          assert.deepStrictEqual(kinds(blocked.callbacks), ["approval"])
          const approval = blocked.callbacks[0]
          assert.strictEqual(approval._tag === "OpenApproval" ? approval.request.tool.id : "", "client.lookup_price")
          assert.strictEqual(counter.count, 0, "nothing ran before the approval")
          yield* Turn.answer(turn, approval.id, allow)
          const final = yield* within("the turn after its approval", Turn.result(turn, { after: blocked }))
          assert.strictEqual(stateAs(final, "Completed").text, ATLAS_ANSWER)
          assert.strictEqual(counter.count, 1, "the handler ran once, after the approval")
          const events = yield* logOf(turn)
          assert.deepStrictEqual(toolEvents(events), [
            "ToolCallStarted",
            "CallbackOpened(approval)",
            "CallbackResolved(answered)",
            "ToolExecutionStarted",
            "ToolCallCompleted"
          ])
        }), { runtimeTools: [tool] })
    })

    it.effect("a typed failure of the handler reaches the model as a failure result; the turn goes on", () => {
      const counter = runs()
      const tool = priceTool(counter)
      return withModel(ScriptedModel.fromFunction(priceBrain), (model) =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(pricer(tool.spec, "allow"))
          const turn = yield* Session.sendMessage(session, ZEPHYR)
          const events = yield* follow(turn)
          assert.strictEqual(stateAs(endState(events), "Completed").text, `No price: ${NO_ZEPHYR}`)
          assert.strictEqual(counter.count, 1)
          const completed = toolCompleted(events, "lookup_price")
          assert.isTrue(completed.isFailure)
          assert.strictEqual(completed.result, NO_ZEPHYR)
          assert.deepStrictEqual(toolEvents(events), ["ToolCallStarted", "ToolExecutionStarted", "ToolCallCompleted"])
          const calls = yield* model.calls
          assert.deepStrictEqual(
            ScriptedModel.toolResults(calls[calls.length - 1]).map((result) => [result.isFailure, result.result]),
            [[true, NO_ZEPHYR]]
          )
        }), { runtimeTools: [tool] })
    })

    it.effect("a defect in the handler ends the turn Failed with a ToolFailure", () =>
      withModel(ScriptedModel.fromFunction(priceBrain), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(pricer(crashingTool.spec, "allow"))
          const turn = yield* Session.sendMessage(session, ATLAS)
          const events = yield* follow(turn)
          const failed = stateAs(endState(events), "Failed")
          assert.strictEqual(failed.error._tag, "ToolFailure")
          assert.include(failed.error.message, "client.lookup_price")
          assert.include(failed.error.message, "the price service crashed")
          assert.strictEqual(ofTag(events, "ToolExecutionStarted").length, 1)
        }), { runtimeTools: [crashingTool] }))

    it.effect("a client waiting with Turn.result and a handler of its own: the runtime runs the tool, not the client", () => {
      const onClient = runs()
      const inRuntime = runs()
      const clientTool = priceTool(onClient)
      const runtimeTool = priceTool(inRuntime)
      return withModel(ScriptedModel.fromFunction(priceBrain), () =>
        Effect.gen(function*() {
          // The agent carries the tool with its handler, and the handler is in context too.
          const agent = pricer(clientTool, "allow")
          const state = yield* within(
            "Agent.run",
            Agent.run(agent, ATLAS).pipe(Effect.provide(CallbackHandler.layer(Tool.handlers(clientTool))))
          )
          const completed = stateAs(state, "Completed")
          assert.strictEqual(completed.text, ATLAS_ANSWER)
          assert.strictEqual(onClient.count, 0, "the client's handler never ran")
          assert.strictEqual(inRuntime.count, 1, "the runtime's handler ran once")
          const turn = yield* Effect.flatMap(
            Agent.session(agent, completed.sessionId),
            (session) => Session.turn(session, completed.turnId)
          )
          const events = yield* logOf(turn)
          assert.deepStrictEqual(ofTag(events, "CallbackOpened"), [], "no clientTool callback opened")
          assert.deepStrictEqual(toolEvents(events), ["ToolCallStarted", "ToolExecutionStarted", "ToolCallCompleted"])
        }), { runtimeTools: [runtimeTool] })
    })

    it.effect(
      unprovided === "refused"
        ? "a tool marked to run in the runtime, whose handler this runtime lacks, is refused when the session starts"
        : "a tool marked to run in the runtime, whose handler this runtime lacks, gets a failure result",
      () => unprovided === "refused" ? refusedAtStart() : failureResult()
    )

    const refusedAtStart = () => {
      const tool = priceTool(runs())
      const marked = new ToolSpec({ ...tool.spec, runsIn: "runtime" })
      return withModel(ScriptedModel.fromFunction(priceBrain), (model) =>
        Effect.gen(function*() {
          const started = yield* Effect.result(Agent.startSession(pricer(marked, "allow")))
          if (Result.isSuccess(started)) return assert.fail("the session started")
          const error = started.failure
          assert.strictEqual(error._tag, "AgentInvalid")
          assert.include(error.message, "lookup_price")
          assert.include(error.message, "no handler")
          assert.deepStrictEqual(yield* model.calls, [])
        }))
    }

    const failureResult = () => {
      const onClient = runs()
      const tool = priceTool(onClient)
      const marked = new ToolSpec({ ...tool.spec, runsIn: "runtime" })
      return withModel(ScriptedModel.fromFunction(priceBrain), () =>
        Effect.gen(function*() {
          // A client handler is at hand, but the definition says the runtime answers: no callback, and no hang.
          const state = yield* within(
            "Agent.run",
            Agent.run(pricer(marked, "allow"), ATLAS).pipe(Effect.provide(CallbackHandler.layer(Tool.handlers(tool))))
          )
          const completed = stateAs(state, "Completed")
          assert.include(completed.text, "No price: ")
          assert.include(completed.text, "no handler for client.lookup_price")
          assert.strictEqual(onClient.count, 0)
          const session = yield* Agent.session(pricer(marked, "allow"), completed.sessionId)
          const events = yield* logOf(yield* Session.turn(session, completed.turnId))
          assert.deepStrictEqual(toolEvents(events), ["ToolCallStarted", "ToolExecutionStarted", "ToolCallCompleted"])
          assert.isTrue(toolCompleted(events, "lookup_price").isFailure)
        }))
    }

    it.effect("a subagent's tool runs in the runtime too: the root's app only follows Turn.events", () => {
      const counter = runs()
      const tool = priceTool(counter)
      const researcher = researcherOf(tool.spec)
      const desk = deskOf(researcher)
      return withModel(
        treeModel([[desk, delegateBrain("researcher")], [researcher, researcherBrain]]),
        () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(desk)
            const turn = yield* Session.sendMessage(session, ATLAS)
            const events = yield* follow(turn)
            assert.strictEqual(stateAs(endState(events), "Completed").text, ATLAS_ANSWER)
            assert.strictEqual(counter.count, 1)
            // The whole tree's log: the researcher's call ran in the runtime, and nothing asked the client.
            const transport = yield* Transport.Transport
            const tree = yield* transport.events(session.id, 0).pipe(
              Stream.takeUntil((event) => event._tag === "TurnEnded" && event.turnId === turn.turnId),
              Stream.runCollect
            )
            assert.deepStrictEqual(ofTag(tree, "CallbackOpened"), [])
            const executed = ofTag(tree, "ToolExecutionStarted")
            assert.deepStrictEqual(executed.map((event) => event.toolId), ["client.lookup_price"])
            assert.notStrictEqual(executed[0].sessionId, session.id, "the call is the researcher's")
            const completed = toolCompleted(tree, "lookup_price")
            assert.deepStrictEqual([completed.isFailure, completed.result], [false, { price: "1,200 EUR" }])
          }),
        { runtimeTools: [tool] }
      )
    })
  })
