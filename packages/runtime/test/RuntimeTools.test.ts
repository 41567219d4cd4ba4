import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent, TurnState } from "@parley/core"
import { Agent, Answer, Inbox, Session, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, Tool, ToolAnnotations } from "@parley/tools"
import { Deferred, Effect, Layer, Option, Schema, Stream } from "effect"

// Tools the runtime runs (issue 9), beyond the transport contract: what the stored definition says, the ways to give
// the runtime its handlers, and recovery — a call that started (`ToolExecutionStarted`) in an engine that stopped is
// reported to the model as interrupted by the next engine over the same store, unless the tool is idempotent.

/** `seconds` of real time, under a `TestClock` (`it.effect`) or the live clock (`it.live`) alike. */
const realSleep = (seconds: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), seconds * 1000)
    return Effect.sync(() => clearTimeout(timer))
  })

/** `effect`, failed when it has not finished after `seconds` of real time (a `TestClock` never moves by itself). */
const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    realSleep(seconds).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
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

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

/** An engine over `store` whose agents run on `model`, and which runs `tools` itself. */
const engine = (
  store: SessionStore.Services,
  model: ScriptedModel.Service,
  tools: Layer.Layer<RuntimeTools.RuntimeTools>,
  owner?: string
) =>
  LocalTransport.layerWith({ owner }).pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layerEmpty,
      tools,
      Models.layer(Models.single(model.languageModel))
    ])
  )

const ATLAS = "What does the Atlas cost?"
const ATLAS_ANSWER = "The Atlas costs 1,200 EUR."

const priceOptions = (annotations: ToolAnnotations.ToolAnnotations) => ({
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String }),
  annotations
})

/** `lookup_price` whose handler runs `onRun` first, then answers 1,200 EUR. */
const priceTool = (onRun: Effect.Effect<void>, annotations = ToolAnnotations.none) =>
  Tool.make("lookup_price", priceOptions(annotations), () => Effect.as(onRun, { price: "1,200 EUR" }))

const pricer = (tools: ReadonlyArray<Agent.ToolLike>, subagents: ReadonlyArray<Agent.Agent> = []) =>
  Agent.make({
    name: "pricer",
    model: "scripted",
    instructions: "Look up the price, then answer in one sentence.",
    tools,
    subagents,
    permissionMode: "allow"
  })

/** Looks up the Atlas, then gives its price or the failure it got. */
const priceBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const price = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product: "Atlas" })
  if (price.isFailure) return ScriptedModel.text(`No price: ${String(price.result)}`)
  return ScriptedModel.text(`The Atlas costs ${(price.result as { readonly price: string }).price}.`)
}

describe("RuntimeTools", () => {
  it.effect("the stored definition marks the tools with a handler, in subagents too; the given agent is unchanged", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const model = yield* ScriptedModel.fromFunction(priceBrain)
      const price = priceTool(Effect.void)
      const other = ClientTool.make("get_location", {
        description: "The user's location.",
        success: Schema.Struct({ city: Schema.String })
      })
      const researcher = Agent.make({ name: "researcher", instructions: "Price it.", tools: [price.spec] })
      const agent = pricer([price.spec, other], [researcher])
      const session = yield* Agent.startSession(agent).pipe(
        Effect.provide(engine(store, model, RuntimeTools.layer(price)))
      )
      const info = yield* store.eventLog.getTree(session.id)
      const stored = Option.getOrThrow(info).agent
      assert.deepStrictEqual(stored.tools.map((tool) => [tool.id, tool.runsIn]), [
        ["client.lookup_price", "runtime"],
        ["client.get_location", "client"]
      ])
      assert.deepStrictEqual(stored.subagents[0].tools.map((tool) => tool.runsIn), ["runtime"])
      assert.deepStrictEqual(agent.spec.tools.map((tool) => tool.runsIn), ["client", "client"])
      assert.deepStrictEqual(agent.spec.subagents[0].tools.map((tool) => tool.runsIn), ["client"])
    }))

  it.effect("layerMemory({ tools }) runs client tools answered with tool.answer(fn): the first that answers wins", () =>
    Effect.gen(function*() {
      const getCity = ClientTool.make("get_city", {
        description: "The user's city.",
        success: Schema.Struct({ city: Schema.String })
      })
      const agent = Agent.make({ name: "locator", model: "m", instructions: "Locate.", tools: [getCity] })
      const runtime = LocalTransport.layerMemory({
        tools: [
          getCity.answer(() => new Answer.KeepCallbackOpen()),
          getCity.answer(() => ({ city: "Lyon" })),
          getCity.answer(() => ({ city: "Paris" }))
        ]
      }).pipe(
        Layer.provide(ScriptedModel.layer([ScriptedModel.toolCall("get_city", {}), ScriptedModel.text("Lyon.")]))
      )
      const events = yield* Effect.gen(function*() {
        const completed = stateAs(yield* within("Agent.run", Agent.run(agent, "Where am I?")), "Completed")
        const session = yield* Agent.session(agent, completed.sessionId)
        return yield* logOf(yield* Session.turn(session, completed.turnId))
      }).pipe(Effect.provide(runtime))
      assert.deepStrictEqual(ofTag(events, "CallbackOpened"), [])
      const result = ofTag(events, "ToolCallCompleted")[0]
      assert.deepStrictEqual([result.isFailure, result.result], [false, { city: "Lyon" }])
    }))

  it.effect("arguments that do not decode are a failure result and the handler does not run", () =>
    Effect.gen(function*() {
      let runs = 0
      const price = priceTool(Effect.sync(() => void runs++))
      const model = yield* ScriptedModel.fromFunction((call) => {
        const result = ScriptedModel.toolResults(call)[0]
        return result === undefined
          ? ScriptedModel.toolCall("lookup_price", { product: 42 })
          : ScriptedModel.text(`No price: ${String(result.result)}`)
      })
      const store = yield* SessionStore.makeMemory
      const state = yield* within("Agent.run", Agent.run(pricer([price.spec]), ATLAS)).pipe(
        Effect.provide(engine(store, model, RuntimeTools.layer(price)))
      )
      const text = stateAs(state, "Completed").text
      assert.include(text, "Invalid arguments for lookup_price")
      assert.include(text, "product")
      assert.strictEqual(runs, 0)
    }))

  it.effect("a handler that keeps the call open gives a failure result: no one else answers a runtime tool", () =>
    Effect.gen(function*() {
      const keep = Tool.make("lookup_price", priceOptions(ToolAnnotations.none), () => new Answer.KeepCallbackOpen())
      const store = yield* SessionStore.makeMemory
      const model = yield* ScriptedModel.fromFunction(priceBrain)
      const state = yield* within("Agent.run", Agent.run(pricer([keep.spec]), ATLAS)).pipe(
        Effect.provide(engine(store, model, RuntimeTools.layer(keep)))
      )
      const text = stateAs(state, "Completed").text
      assert.include(text, "No price: ")
      assert.include(text, "left the call open")
    }))

  it.effect("get finds the handler of a tool by id, and nothing for other ids", () =>
    Effect.sync(() => {
      const price = priceTool(Effect.void)
      assert.isTrue(Option.isSome(RuntimeTools.make(price).get("client.lookup_price")))
      assert.isTrue(Option.isNone(RuntimeTools.make(price).get("client.other")))
      assert.isTrue(Option.isNone(RuntimeTools.make().get("client.lookup_price")))
    }))
})

// ----------------------------------------------------------------------------
// Recovery: engine A stops while the handler runs; engine B over the same store takes the tree up
// ----------------------------------------------------------------------------

/**
 * Engine A starts a turn whose `lookup_price` handler hangs, and stops (its layer is released) once the handler
 * started. Returns the session and turn ids, and the stored log.
 */
const stopWhileRunning = (
  store: SessionStore.Services,
  agent: Agent.Agent,
  annotations: ToolAnnotations.ToolAnnotations
) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const hanging = priceTool(Effect.andThen(Deferred.succeed(started, undefined), Effect.never), annotations)
    const model = yield* ScriptedModel.fromFunction(priceBrain)
    const ids = yield* Effect.gen(function*() {
      const session = yield* Agent.startSession(agent)
      const turn = yield* Session.sendMessage(session, ATLAS)
      yield* within("engine A's handler starts", Deferred.await(started))
      return { sessionId: session.id, turnId: turn.turnId }
    }).pipe(Effect.provide(engine(store, model, RuntimeTools.layer(hanging), "engine-a")))
    const log = yield* store.eventLog.read(ids.sessionId, 0)
    return { ...ids, log }
  })

describe("RuntimeTools: recovery", () => {
  for (const idempotent of [false, true]) {
    const what = idempotent
      ? "an idempotent tool that started in a stopped engine runs again, once, in the next engine"
      : "a tool that started in a stopped engine is reported interrupted by the next engine, never run again"
    it.effect(what, () =>
      Effect.gen(function*() {
        const annotations = idempotent ? ToolAnnotations.idempotent : ToolAnnotations.none
        const store = yield* SessionStore.makeMemory
        const agent = pricer([priceTool(Effect.void, annotations).spec])
        // The tool's annotations reach its spec, which the stored definition carries.
        assert.strictEqual(agent.spec.tools[0].annotations.idempotentHint, idempotent)
        const { log, sessionId, turnId } = yield* stopWhileRunning(store, agent, annotations)
        // The log engine A left: the call started and has no result.
        assert.strictEqual(log[log.length - 1]._tag, "ToolExecutionStarted")
        assert.deepStrictEqual(ofTag(log, "ToolCallCompleted"), [])

        let runs = 0
        const counting = priceTool(Effect.sync(() => void runs++), annotations)
        const modelB = yield* ScriptedModel.fromFunction(priceBrain)
        const { events, final } = yield* Effect.gen(function*() {
          const session = yield* Agent.session(agent, sessionId)
          const turn = yield* Session.turn(session, turnId)
          const final = yield* within("engine B's Turn.result", Turn.result(turn))
          return { final, events: yield* logOf(turn) }
        }).pipe(Effect.provide(engine(store, modelB, RuntimeTools.layer(counting), "engine-b")))

        const text = stateAs(final, "Completed").text
        const completed = ofTag(events, "ToolCallCompleted")
        assert.strictEqual(completed.length, 1)
        // Each start names the engine that recorded it: A's, then (idempotent only) B's own, under its lease.
        const starts = ofTag(events, "ToolExecutionStarted").map((event) => event.executor?.owner)
        assert.strictEqual(starts[0], "engine-a")
        assert.deepStrictEqual(starts, idempotent ? ["engine-a", "engine-b"] : ["engine-a"])
        if (idempotent) {
          assert.strictEqual(runs, 1, "engine B ran the idempotent tool again, once")
          assert.strictEqual(text, ATLAS_ANSWER)
          assert.deepStrictEqual([completed[0].isFailure, completed[0].result], [false, { price: "1,200 EUR" }])
        } else {
          assert.strictEqual(runs, 0, "engine B did not run the tool again")
          assert.isTrue(completed[0].isFailure)
          assert.include(String(completed[0].result), "was interrupted")
          assert.include(text, "was interrupted")
        }
        // Engine B made only the step after the tool's result.
        assert.strictEqual((yield* modelB.calls).length, 1)
      }))
  }
})

describe("durable points", () => {
  it.effect("an approval loop syncs its callback and its answer (with the tool's start); the rest rides along", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const appends: Array<string> = []
      const store: SessionStore.Services = {
        ...memory,
        eventLog: {
          ...memory.eventLog,
          append: (treeId, expectedSeq, events, lease, durability) =>
            Effect.andThen(
              Effect.sync(() => void appends.push(`${durability ?? "sync"}: ${events.map((e) => e._tag).join(" ")}`)),
              memory.eventLog.append(treeId, expectedSeq, events, lease, durability)
            )
        }
      }
      const model = yield* ScriptedModel.fromFunction(priceBrain)
      const agent = Agent.make({
        name: "pricer",
        model: "scripted",
        instructions: "Look up the price, then answer in one sentence.",
        tools: [priceTool(Effect.void)],
        permissionMode: "ask"
      })
      const state = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        const blocked = stateAs(yield* Session.run(session, ATLAS), "Blocked")
        const turn = yield* Session.turn(session, blocked.turnId)
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        return yield* within("the turn", Turn.result(turn, { after: blocked }))
      }).pipe(Effect.provide(engine(store, model, RuntimeTools.layer(priceTool(Effect.void)))))
      assert.strictEqual(stateAs(state, "Completed").text, ATLAS_ANSWER)
      assert.deepStrictEqual(appends, [
        "relaxed: TurnQueued TurnStarted ModelStepStarted",
        "sync: ToolCallStarted CallbackOpened TurnBlocked",
        "sync: CallbackResolved ToolExecutionStarted",
        "relaxed: ToolCallCompleted ModelStepStarted",
        "relaxed: MessageCompleted TurnEnded"
      ])
    }))
})

describe("eviction under a batch", () => {
  it.live("a paused tree answered from another engine is not evicted while its owner records the tool's start", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      let runs = 0
      // The owner's append of the tool's start takes past the paused tree's time-to-live (200 ms here): its eviction
      // comes due in the middle of the batch that records the start.
      const store: SessionStore.Services = {
        ...memory,
        eventLog: {
          ...memory.eventLog,
          append: (treeId, expectedSeq, events, lease, durability) =>
            Effect.andThen(
              events.some((event) => event._tag === "ToolExecutionStarted")
                ? Effect.sleep("300 millis")
                : Effect.void,
              memory.eventLog.append(treeId, expectedSeq, events, lease, durability)
            )
        }
      }
      const agent = Agent.make({
        name: "pricer",
        model: "scripted",
        instructions: "Look up the price, then answer in one sentence.",
        tools: [priceTool(Effect.void)],
        permissionMode: "ask"
      })
      const model = yield* ScriptedModel.fromFunction(priceBrain)
      const owner = yield* Layer.build(
        LocalTransport.layerWith({ owner: "owner", pausedTimeToLive: "200 millis" }).pipe(
          Layer.provide([
            SessionStore.layer(store),
            Connectors.layerEmpty,
            RuntimeTools.layer(priceTool(Effect.sync(() => void runs++))),
            Models.layer(Models.single(model.languageModel))
          ])
        )
      )
      const answerer = yield* Layer.build(
        LocalTransport.layerWith({ owner: "answerer", runsWork: false }).pipe(
          Layer.provide([
            SessionStore.layer(store),
            Connectors.layerEmpty,
            RuntimeTools.layerEmpty,
            Models.layer(Models.single(model.languageModel))
          ])
        )
      )
      const session = yield* Agent.startSession(agent).pipe(Effect.provide(owner))
      const blocked = stateAs(yield* Session.run(session, ATLAS).pipe(Effect.provide(owner)), "Blocked")
      yield* Inbox.answer(blocked.callbacks[0], new Answer.AllowApproval()).pipe(Effect.provide(answerer))
      // Nothing of this process holds the tree meanwhile: the owner hears of the answer from the store alone.
      yield* Effect.sleep("600 millis")
      const turn = yield* Session.turn(session, blocked.turnId).pipe(Effect.provide(owner))
      const state = yield* within("the turn", Turn.result(turn, { after: blocked })).pipe(Effect.provide(owner))
      assert.strictEqual(stateAs(state, "Completed").text, ATLAS_ANSWER)
      assert.strictEqual(runs, 1)
    }).pipe(Effect.scoped))
})
