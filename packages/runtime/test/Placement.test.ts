import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent } from "@parley/core"
import { Agent, Session, Transport, Turn } from "@parley/core"
import { Connectors, Engine, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Duration, Effect, Exit, Layer, Option, Scope } from "effect"
import { TestClock } from "effect/testing"

// Placement (issue 22): an engine whose trees something else (a cluster) places on it. It keeps no heartbeat, takes
// nothing over and recovers nothing at start; `place` claims a tree unconditionally — from a live lease owner too —
// and resumes it, as a new owner does under leases.

const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
  )

const services = (store: SessionStore.Services, model: ScriptedModel.Service) =>
  Layer.mergeAll(
    SessionStore.layer(store),
    Connectors.layerEmpty,
    RuntimeTools.layerEmpty,
    Models.layer(Models.single(model.languageModel))
  )

/** A placed engine in a scope of its own. */
const placed = (store: SessionStore.Services, model: ScriptedModel.Service, owner: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const engine = yield* Engine.makePlaced({ owner }).pipe(
      Effect.provide(services(store, model)),
      Scope.provide(scope)
    )
    return { ...engine, stop: Scope.close(scope, Exit.void) }
  })

/** An engine under leases in a scope of its own. */
const leased = (store: SessionStore.Services, model: ScriptedModel.Service, owner: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      LocalTransport.layerWith({ owner }).pipe(Layer.provide(services(store, model))),
      scope
    )
    return {
      provide: Effect.provide(context),
      stop: Scope.close(scope, Exit.void)
    }
  })

const greeter = Agent.make({ name: "greeter", model: "scripted", instructions: "Greet." })
const hello = ScriptedModel.fromFunction(() => ScriptedModel.text("Hello there!"))
/** A model whose every call waits forever (a step in flight when its engine stops). */
const stuck = ScriptedModel.fromFunction(() => Effect.never)

const tagsOf = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((event) => event._tag)

const waitFor = (store: SessionStore.Services, treeId: TurnEvent.TurnEvent["sessionId"], tag: string) =>
  within(
    `a ${tag} in the log`,
    Effect.gen(function*() {
      while (true) {
        const events = yield* store.eventLog.read(treeId, 0)
        if (events.some((event) => event._tag === tag)) return events
        yield* TestClock.withLive(Effect.sleep("2 millis"))
      }
    })
  )

const pause = (millis: number) => TestClock.withLive(Effect.sleep(Duration.millis(millis)))

describe("Engine.makePlaced: trees placed by something else", () => {
  it.effect("runs nothing of a tree it is not placed on; placed, it runs the queued turn", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const model = yield* hello
      const engine = yield* placed(store, model, "runner-1")
      const turn = yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }).pipe(Effect.provide(Layer.succeed(Transport.Transport, engine.transport)))
      yield* pause(100)
      // Decided (a follower decides), not run: no model step was called, the turn does not end.
      assert.notInclude(tagsOf(yield* store.eventLog.read(turn.sessionId, 0)), "TurnEnded")
      assert.strictEqual((yield* model.calls).length, 0, "not placed: no model step")
      yield* engine.place(turn.sessionId)
      const events = yield* waitFor(store, turn.sessionId, "TurnEnded")
      assert.strictEqual((yield* model.calls).length, 1)
      const ended = events[events.length - 1]
      assert.strictEqual(ended._tag === "TurnEnded" ? ended.state._tag : "", "Completed")
      // Placed again (a message to its entity): nothing claimed twice, nothing resumed twice.
      yield* engine.place(turn.sessionId)
      yield* pause(50)
      assert.strictEqual((yield* store.eventLog.read(turn.sessionId, 0)).length, events.length)
      const state = yield* Turn.result(turn).pipe(Effect.provide(Layer.succeed(Transport.Transport, engine.transport)))
      assert.strictEqual(state._tag, "Completed")
      yield* engine.stop
    }))

  it.effect("recovers nothing at start, even its own name's trees; placed, it re-issues the step in flight", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* leased(store, yield* stuck, "engine-1")
      const turn = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      yield* waitFor(store, turn.sessionId, "ModelStepStarted")
      yield* a.stop
      const model = yield* hello
      // Under leases an engine of the same name takes it up at once (Leases.test.ts); placed, it waits to be told.
      const engine = yield* placed(store, model, "engine-1")
      yield* pause(100)
      assert.strictEqual((yield* store.eventLog.read(turn.sessionId, 0)).length, 3)
      assert.strictEqual((yield* model.calls).length, 0)
      yield* engine.place(turn.sessionId)
      const events = yield* waitFor(store, turn.sessionId, "TurnEnded")
      assert.deepStrictEqual(tagsOf(events), [
        "TurnQueued",
        "TurnStarted",
        "ModelStepStarted",
        "MessageAborted",
        "ModelStepStarted",
        "MessageCompleted",
        "TurnEnded"
      ])
      yield* engine.stop
    }))

  it.effect("takes a tree from a live lease owner: the epoch rises, the old owner's append is fenced off", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* leased(store, yield* stuck, "engine-a")
      const turn = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      yield* waitFor(store, turn.sessionId, "ModelStepStarted")
      // engine-a is alive (it beats) and holds the tree: a plain claim by anyone else fails.
      assert.isTrue(Option.isNone(yield* store.leases.claim(turn.sessionId, "someone-else")))
      const engine = yield* placed(store, yield* hello, "runner-2")
      yield* engine.place(turn.sessionId)
      const events = yield* waitFor(store, turn.sessionId, "TurnEnded")
      assert.includeMembers(tagsOf(events), ["MessageAborted", "MessageCompleted"])
      const ended = events[events.length - 1]
      assert.strictEqual(ended._tag === "TurnEnded" ? ended.state._tag : "", "Completed")
      // engine-a claimed it (epoch 1), runner-2 took it (epoch 2): the next claim is the third tenure. An append under
      // engine-a's epoch 1 fails `LeaseLost` (SessionStoreSuite: "an unconditional claim takes a tree…").
      assert.deepStrictEqual(
        Option.getOrUndefined(yield* store.leases.claim(turn.sessionId, "runner-2", { unconditional: true })),
        { owner: "runner-2", epoch: 3 }
      )
      yield* engine.stop
      yield* a.stop
    }))

  it.effect("placing a tree that does not exist is SessionNotFound", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const engine = yield* placed(store, yield* hello, "runner-3")
      const error = yield* Effect.flip(engine.place("sess_missing" as never))
      assert.strictEqual(error._tag, "SessionNotFound")
      yield* engine.stop
    }))
})
