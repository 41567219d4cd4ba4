import { assert, describe, it } from "@effect/vitest"
import type { Callback, TurnEvent, TurnState } from "@parley/core"
import { Agent, Answer, Permissions, Session, ToolSpec, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Duration, Effect, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"

// Two engines over one store: engine A runs a turn until it waits on a callback, A's layer is released (its scope
// closes, as when a process stops), and engine B over the same store takes over: it finds the session and the turn,
// lists the open callback, takes the answer and completes the turn. Issue 8: "a restarted engine over the same store
// answers SessionNotFound for a session that had an open approval".

/** `effect`, failed when it has not finished after `seconds` of real time (a `TestClock` never moves by itself). */
const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
  )

/** An engine over `store`: a fresh `LocalTransport` whose agents run on `model`. */
const engine = (store: SessionStore.Services, model: ScriptedModel.Service) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layer([Connectors.demoMailbox()]),
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ])
  )

const stateAs = <Tag extends TurnState.TurnState["_tag"]>(
  state: TurnState.TurnState,
  tag: Tag
): Extract<TurnState.TurnState, { _tag: Tag }> => {
  assert.strictEqual(
    state._tag,
    tag,
    `the turn is ${state._tag}${state._tag === "Failed" ? ` (${state.error.message})` : ""}`
  )
  return state as Extract<TurnState.TurnState, { _tag: Tag }>
}

const logOf = (turn: Turn.Turn) => within("the turn's log", Stream.runCollect(Turn.events(turn)))

const resolutionsOf = (events: ReadonlyArray<TurnEvent.TurnEvent>, callbackId: string) =>
  events.flatMap((event) =>
    event._tag === "CallbackResolved" && event.callbackId === callbackId ? [event.resolution] : []
  )

const onlyCallback = (state: TurnState.Blocked, kind: Callback.Kind): Callback.Callback => {
  assert.deepStrictEqual(state.callbacks.map((callback) => callback.kind), [kind])
  return state.callbacks[0]
}

const allow = new Answer.AllowApproval()

// ----- an approval: lookup_price (a tool with a handler) under permissionMode "ask" -----

const PRICES: Record<string, string> = { atlas: "1,200 EUR" }
const ATLAS = "What does the Atlas cost?"

const pricer = (onRun: () => void) =>
  Agent.make({
    name: "pricer",
    model: "scripted",
    instructions: "Look up the price, then answer in one sentence.",
    permissionMode: "ask",
    tools: [
      Tool.make("lookup_price", {
        description: "Price of one product.",
        parameters: { product: Schema.String },
        success: Schema.Struct({ price: Schema.String })
      }, ({ product }) => {
        onRun()
        return { price: PRICES[product.toLowerCase()] ?? "unknown" }
      })
    ]
  })

const pricerBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const price = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product: "Atlas" })
  return ScriptedModel.text(`The Atlas costs ${(price.result as { readonly price: string }).price}.`)
}

// ----- a client tool call: get_location (answered by the program) -----

const getLocation = new ToolSpec.ToolSpec({
  id: "client.get_location" as ToolSpec.ToolSpec["id"],
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: {} },
  success: {
    type: "object",
    properties: { city: { type: "string" }, country: { type: "string" } },
    required: ["city", "country"]
  },
  annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
})

const locator = (decision: "allow" | "ask") =>
  Agent.make({
    name: "locator",
    model: "scripted",
    instructions: "Use your tools. Answer in one short sentence.",
    tools: [getLocation],
    permissions: new Permissions.PermissionPolicy({
      default: "allow",
      rules: [new Permissions.PermissionRule({ tools: ["client.get_location"], decision })]
    })
  })

const HELLO = "Hello."
const GREETING = "Hello! How can I help?"
const WHERE = "Where am I?"
const IN_LYON = "You're in Lyon, France."
const NO_LOCATION = "I could not find where you are."

/** Greets on `HELLO`; otherwise calls get_location and describes its result. */
const locatorBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  if (ScriptedModel.lastUserText(call) === HELLO) return ScriptedModel.text(GREETING)
  const located = ScriptedModel.toolResults(call).find((result) => result.name === "get_location")
  if (located === undefined) return ScriptedModel.toolCall("get_location", {})
  if (located.isFailure) return ScriptedModel.text(NO_LOCATION)
  const where = located.result as { readonly city: string; readonly country: string }
  return ScriptedModel.text(`You're in ${where.city}, ${where.country}.`)
}

const lyon = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })

describe("Restart: a second engine over the same store", () => {
  it.effect("an open approval survives the restart: engine B finds the turn, takes the answer, completes it", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      let runs = 0
      const agent = pricer(() => void runs++)
      const modelA = yield* ScriptedModel.fromFunction(pricerBrain)
      const state = yield* within("engine A's run", Agent.run(agent, ATLAS)).pipe(
        Effect.provide(engine(store, modelA))
      )
      // Engine A is gone: its layer was released when `Effect.provide` ended.
      const blocked = stateAs(state, "Blocked")
      const approval = onlyCallback(blocked, "approval")
      assert.strictEqual(approval._tag === "OpenApproval" ? approval.request.tool.id : "", "client.lookup_price")

      const modelB = yield* ScriptedModel.fromFunction(pricerBrain)
      const { events, final, open } = yield* Effect.gen(function*() {
        const session = yield* Agent.session(agent, blocked.sessionId)
        const turn = yield* Session.turn(session, blocked.turnId)
        const open = yield* Turn.openCallbacks(turn)
        yield* Turn.answer(turn, approval.id, allow)
        // The tool's handler (it comes with the agent) answers the client tool call while B's Turn.result waits.
        const final = yield* within("engine B's Turn.result", Turn.result(turn, { after: blocked }))
        return { open, final, events: yield* logOf(turn) }
      }).pipe(Effect.provide(engine(store, modelB)))

      assert.deepStrictEqual(open.map((callback) => callback.id), [approval.id])
      assert.strictEqual(stateAs(final, "Completed").text, "The Atlas costs 1,200 EUR.")
      assert.deepStrictEqual(resolutionsOf(events, approval.id), ["answered"])
      assert.strictEqual(runs, 1, "the tool ran once, after the approval")
      // A made the tool call, B only the step after it: nothing was redone.
      assert.strictEqual((yield* modelA.calls).length, 1)
      assert.strictEqual((yield* modelB.calls).length, 1)
    }))

  it.effect("an open client tool call survives the restart: engine B takes its result and completes the turn", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const agent = locator("allow")
      const modelA = yield* ScriptedModel.fromFunction(locatorBrain)
      const state = yield* within("engine A's run", Agent.run(agent, WHERE)).pipe(
        Effect.provide(engine(store, modelA))
      )
      const blocked = stateAs(state, "Blocked")
      const call = onlyCallback(blocked, "client_tool")

      const modelB = yield* ScriptedModel.fromFunction(locatorBrain)
      const { events, final, open } = yield* Effect.gen(function*() {
        const session = yield* Agent.session(agent, blocked.sessionId)
        const turn = yield* Session.turn(session, blocked.turnId)
        const open = yield* Turn.openCallbacks(turn)
        yield* Turn.answer(turn, call.id, lyon)
        const final = yield* within("engine B's Turn.result", Turn.result(turn, { after: blocked }))
        return { open, final, events: yield* logOf(turn) }
      }).pipe(Effect.provide(engine(store, modelB)))

      assert.deepStrictEqual(open.map((callback) => callback.id), [call.id])
      assert.strictEqual(stateAs(final, "Completed").text, IN_LYON)
      assert.deepStrictEqual(resolutionsOf(events, call.id), ["answered"])
      assert.strictEqual((yield* modelA.calls).length, 1)
      assert.strictEqual((yield* modelB.calls).length, 1)
    }))

  it.effect("an approval's deadline survives the restart: engine B expires it at its original time", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const agent = locator("ask")
      const modelA = yield* ScriptedModel.fromFunction(locatorBrain)
      const state = yield* within("engine A's run", Agent.run(agent, WHERE)).pipe(
        Effect.provide(engine(store, modelA))
      )
      const blocked = stateAs(state, "Blocked")
      const approval = onlyCallback(blocked, "approval")
      yield* TestClock.adjust("30 minutes")

      const modelB = yield* ScriptedModel.fromFunction(locatorBrain)
      const { events, final, stillOpen } = yield* Effect.gen(function*() {
        const session = yield* Agent.session(agent, blocked.sessionId)
        const turn = yield* Session.turn(session, blocked.turnId)
        const stillOpen = yield* Turn.openCallbacks(turn)
        // One hour after it opened (not after B started), the approval expires: a denial.
        yield* TestClock.adjust("30 minutes")
        const final = yield* within("engine B's Turn.result", Turn.result(turn, { after: blocked }))
        return { stillOpen, final, events: yield* logOf(turn) }
      }).pipe(Effect.provide(engine(store, modelB)))

      assert.deepStrictEqual(stillOpen.map((callback) => callback.id), [approval.id])
      assert.strictEqual(stateAs(final, "Completed").text, NO_LOCATION)
      assert.deepStrictEqual(resolutionsOf(events, approval.id), ["expired"])
    }))

  it.effect("a turn queued behind a blocked one survives the restart and runs once the first one ends", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const agent = locator("ask")
      const modelA = yield* ScriptedModel.fromFunction(locatorBrain)
      const { blocked, queuedId } = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        const blocked = stateAs(yield* within("engine A's first turn", Session.run(session, WHERE)), "Blocked")
        const queued = yield* Session.sendMessage(session, HELLO)
        return { blocked, queuedId: queued.turnId }
      }).pipe(Effect.provide(engine(store, modelA)))
      const approval = onlyCallback(blocked, "approval")

      const modelB = yield* ScriptedModel.fromFunction(locatorBrain)
      const { first, second } = yield* Effect.gen(function*() {
        const session = yield* Agent.session(agent, blocked.sessionId)
        const turn = yield* Session.turn(session, blocked.turnId)
        yield* Turn.answer(turn, approval.id, new Answer.DenyApproval({ reason: "not now" }))
        const first = yield* within("engine B's first turn", Turn.result(turn, { after: blocked }))
        const queued = yield* Session.turn(session, queuedId)
        const second = yield* within("engine B's queued turn", Turn.result(queued))
        return { first, second }
      }).pipe(Effect.provide(engine(store, modelB)))

      assert.strictEqual(stateAs(first, "Completed").text, NO_LOCATION)
      assert.strictEqual(stateAs(second, "Completed").text, GREETING)
      assert.strictEqual((yield* modelA.calls).length, 1)
    }))
})
