import { assert, describe, it } from "@effect/vitest"
import { ClusterRuntime, TreeEntity } from "@parley/cluster"
import type { TurnEvent } from "@parley/core"
import { Agent, Answer, Session, Transport, Turn } from "@parley/core"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { ClientTool } from "@parley/tools"
import { Duration, Effect, Exit, Layer, Schema, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { sqliteFile } from "./databases.js"

// What the cluster adds to the transport contract (ClusterRuntime.single.test.ts): the Tree entity's messages reach
// the placed engine (and are idempotent), and the wake-up singleton takes up, with nobody asking, the trees a dead
// process left: a turn in flight, and the deadline of a paused one.

const greeter = Agent.make({ name: "greeter", model: "scripted", instructions: "Greet." })
const hello = ScriptedModel.fromFunction(() => ScriptedModel.text("Hello there!"))
/** A model whose every call waits forever (a step in flight when its process stops). */
const stuck = ScriptedModel.fromFunction(() => Effect.never)

const getLocation = ClientTool.make("get_location", {
  description: "Where the user is.",
  success: Schema.Struct({ city: Schema.String })
})
const locator = Agent.make({ name: "locator", model: "scripted", tools: [getLocation], permissionMode: "ask" })
const locatorBrain = (call: ScriptedModel.Call): ScriptedModel.Reply =>
  ScriptedModel.toolResults(call).length === 0
    ? ScriptedModel.toolCall("get_location", {})
    : ScriptedModel.text("The tool said no.")

/** A locator turn, blocked on its approval: the turn. */
const blockedOnApproval = Effect.gen(function*() {
  const session = yield* Agent.startSession(locator)
  const turn = yield* Session.sendMessage(session, "Where am I?")
  const state = yield* Turn.result(turn)
  assert.strictEqual(state._tag, "Blocked")
  return turn
})

const services = (store: Layer.Layer<SessionStore.SessionStore>, model: ScriptedModel.Service) =>
  Layer.mergeAll(
    store,
    Connectors.layerEmpty,
    RuntimeTools.layerEmpty,
    Models.layer(Models.single(model.languageModel))
  )

const sqlite = (filename: string) => Layer.orDie(SqlStore.layerSqlite({ filename }))

/** Builds a layer in a scope of its own, closed by `stop` (a process that stops). */
const start = <A>(layer: Layer.Layer<A>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      provide: Effect.provide(context),
      stop: Scope.close(scope, Exit.void)
    }
  })

const tagsOf = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((event) => event._tag)

/** Reads a tree's log through a store of its own until `done` says so (real time, 10 s at most). */
const waitForLog = (
  filename: string,
  treeId: TurnEvent.TurnEvent["sessionId"],
  done: (events: ReadonlyArray<TurnEvent.TurnEvent>) => boolean,
  meanwhile: Effect.Effect<void> = Effect.void
) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.services
    for (let attempt = 0; attempt < 1000; attempt++) {
      const events = yield* store.eventLog.read(treeId, 0)
      if (done(events)) return events
      yield* meanwhile
      yield* TestClock.withLive(Effect.sleep("10 millis"))
    }
    return assert.fail(
      `tree ${treeId}: the log never got there: ${tagsOf(yield* store.eventLog.read(treeId, 0)).join(", ")}`
    )
  }).pipe(Effect.provide(sqlite(filename)), Effect.scoped)

describe("ClusterRuntime", () => {
  it.live("the Tree entity's SendMessage reaches the placed engine; delivered twice, it queues one turn", () =>
    Effect.gen(function*() {
      const model = yield* hello
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        const client = yield* TreeEntity.Tree.client
        const first = yield* client(session.id).SendMessage({ sessionId: session.id, input: "Hi.", requestId: "r-1" })
        const again = yield* client(session.id).SendMessage({ sessionId: session.id, input: "Hi.", requestId: "r-1" })
        assert.strictEqual(again.turnId, first.turnId)
        const state = yield* Turn.result(Turn.make({ ...first, handler: undefined }))
        assert.strictEqual(state._tag, "Completed")
        const transport = yield* Transport.Transport
        const log = yield* transport.events(session.id, 0).pipe(
          Stream.takeUntil((event) => event._tag === "TurnEnded"),
          Stream.runCollect
        )
        assert.strictEqual(log.filter((event) => event._tag === "TurnQueued").length, 1)
        assert.strictEqual((yield* model.calls).length, 1, "one turn, one model step")
        // Resume of a tree its runner holds: nothing is appended.
        yield* client(session.id).Resume()
      }).pipe(
        Effect.provide(ClusterRuntime.layerSingle().pipe(Layer.provide(services(SessionStore.layerMemory, model))))
      )
    }))

  it.live("the Tree entity's Answer delivered twice (its first delivery won): accepted twice, resolved once", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.fromFunction(locatorBrain)
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(locator)
        const turn = yield* Session.sendMessage(session, "Where am I?")
        const blocked = yield* Turn.result(turn)
        assert.strictEqual(blocked._tag, "Blocked")
        if (blocked._tag !== "Blocked") return
        const approval = blocked.callbacks[0]
        const client = yield* TreeEntity.Tree.client
        const message = {
          sessionId: session.id,
          turnId: turn.turnId,
          callbackId: approval.id,
          answer: { _tag: "DenyApproval", reason: "not now" },
          requestId: "a-1"
        }
        yield* client(session.id).Answer(message)
        // The cluster delivers it again (its runner died before replying): the answer that won, so accepted.
        yield* client(session.id).Answer(message)
        const error = yield* Effect.flip(client(session.id).Answer({ ...message, requestId: "a-2" }))
        assert.strictEqual(error._tag, "CallbackAlreadyAnswered")
        const done = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(done._tag, "Completed")
        const log = yield* (yield* Transport.Transport).events(session.id, 0).pipe(
          Stream.takeUntil((event) => event._tag === "TurnEnded"),
          Stream.runCollect
        )
        const resolved = log.filter((event) => event._tag === "CallbackResolved")
        assert.deepStrictEqual(resolved.map((event) => event._tag === "CallbackResolved" && event.requestId), ["a-1"])
      }).pipe(
        Effect.provide(ClusterRuntime.layerSingle().pipe(Layer.provide(services(SessionStore.layerMemory, model))))
      )
    }))

  it.effect("the wake-up singleton resumes a turn a dead process left in flight, with nobody asking", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const dead = yield* start(
        LocalTransport.layerWith({ owner: "dead" }).pipe(
          Layer.provide(services(sqlite(filename), yield* stuck))
        )
      )
      const turn = yield* dead.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      yield* waitForLog(filename, turn.sessionId, (events) => tagsOf(events).includes("ModelStepStarted"))
      yield* dead.stop
      const model = yield* hello
      const runner = yield* start(ClusterRuntime.layerSingle().pipe(Layer.provide(services(sqlite(filename), model))))
      const events = yield* waitForLog(filename, turn.sessionId, (events) => tagsOf(events).includes("TurnEnded"))
      assert.deepStrictEqual(tagsOf(events), [
        "TurnQueued",
        "TurnStarted",
        "ModelStepStarted",
        "MessageAborted",
        "ModelStepStarted",
        "MessageCompleted",
        "TurnEnded"
      ])
      yield* runner.stop
    }))

  it.effect("the wake-up singleton arms the deadline of a paused tree a dead process left: it expires", () =>
    Effect.gen(function*() {
      const filename = yield* sqliteFile
      const model = yield* ScriptedModel.fromFunction(locatorBrain)
      const dead = yield* start(
        LocalTransport.layerWith({ owner: "dead" }).pipe(
          Layer.provide(services(sqlite(filename), model))
        )
      )
      const turn = yield* dead.provide(blockedOnApproval)
      yield* dead.stop
      const runner = yield* start(ClusterRuntime.layerSingle().pipe(Layer.provide(services(sqlite(filename), model))))
      // The runner loads the tree when the singleton wakes it (real time), and arms the approval's deadline on the
      // test's clock: the hour passes as soon as it is armed.
      const events = yield* waitForLog(
        filename,
        turn.sessionId,
        (events) => tagsOf(events).includes("TurnEnded"),
        TestClock.adjust(Duration.hours(2))
      )
      const resolved = events.find((event) => event._tag === "CallbackResolved")
      assert.strictEqual(resolved?._tag === "CallbackResolved" ? resolved.resolution : "", "expired")
      // Answered late through the cluster: the callback is not open any more.
      const late = yield* runner.provide(Effect.flip(Turn.answer(turn, "cb_none" as never, new Answer.AllowApproval())))
      assert.include(["CallbackNotOpen", "TurnNotFound"], late._tag)
      yield* runner.stop
    }))

  it.effect(
    "the singleton's periodic pass expires a paused tree a process left after the singleton started: its deadline due",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        const model = yield* ScriptedModel.fromFunction(locatorBrain)
        // The runner first: its singleton's pass at start finds nothing.
        const runner = yield* start(
          ClusterRuntime.layerSingle({ wakeUpInterval: "100 millis" }).pipe(
            Layer.provide(services(sqlite(filename), model))
          )
        )
        yield* TestClock.withLive(Effect.sleep("1 second"))
        // Then a process that leaves a paused tree (its approval due in an hour) and dies: no runner holds the tree,
        // no message comes to it.
        const dead = yield* start(
          LocalTransport.layerWith({ owner: "dead" }).pipe(Layer.provide(services(sqlite(filename), model)))
        )
        const turn = yield* dead.provide(blockedOnApproval)
        yield* dead.stop
        // The hour passes (the test's clock, the engine's): the deadline is due, the pass wakes the tree, the runner
        // loads it and expires the approval.
        yield* TestClock.adjust(Duration.hours(2))
        const events = yield* waitForLog(filename, turn.sessionId, (events) => tagsOf(events).includes("TurnEnded"))
        const resolved = events.find((event) => event._tag === "CallbackResolved")
        assert.strictEqual(resolved?._tag === "CallbackResolved" ? resolved.resolution : "", "expired")
        yield* runner.stop
      })
  )
})
