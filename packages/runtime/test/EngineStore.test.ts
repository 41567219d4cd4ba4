import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Ids, Session, Turn, TurnEvent } from "@parley/core"
import type { Engine } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import type { Cause } from "effect"
import { DateTime, Effect, Fiber, Layer, Option, Queue, Schema } from "effect"
import { TestClock } from "effect/testing"

// The engine and its store: appends made by someone else (another process) are noticed, a lost append race is
// decided again on the new log, a failing store is a typed error that leaves the engine working, and idle trees leave
// memory and come back from their log.

const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, () => ({ price: "1,200 EUR" }))

const agent = Agent.make({
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  permissionMode: "ask",
  tools: [lookupPrice]
})

const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const price = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product: "atlas" })
  return ScriptedModel.text(price.isFailure ? `No price: ${String(price.result)}` : "The Atlas costs 1,200 EUR.")
}

/**
 * The same brain reading only the current turn's tool results (those after the last user message): a turn that an
 * earlier, cancelled one left a failed call behind still looks the price up, and so asks for its approval.
 */
const turnBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const messages = call.prompt.content
  let start = messages.length - 1
  while (start >= 0 && messages[start].role !== "user") start--
  const price = messages.slice(start + 1).flatMap((message) =>
    message.role === "tool" ? message.content.filter((part) => part.type === "tool-result") : []
  ).find((part) => part.name === "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product: "atlas" })
  return ScriptedModel.text(price.isFailure ? `No price: ${String(price.result)}` : "The Atlas costs 1,200 EUR.")
}

interface Instrumented {
  readonly service: SessionStore.Services
  /** Whole-log reads (`read(tree, 0)`): one per tree loaded into memory. */
  readonly loads: () => number
  /** Runs once before the next append that resolves a callback. */
  beforeResolve: ((service: SessionStore.Services, treeId: Ids.SessionId) => Effect.Effect<void>) | undefined
  /** Fails the next append with a StoreError. */
  failNext: boolean
  /** Fails the next append whose events match, with a StoreError. */
  failWhen: ((events: ReadonlyArray<TurnEvent.TurnEvent>) => boolean) | undefined
}

const instrumented = Effect.gen(function*() {
  const store = yield* SessionStore.makeMemory
  let loads = 0
  const self: Instrumented = {
    loads: () => loads,
    beforeResolve: undefined,
    failNext: false,
    failWhen: undefined,
    service: {
      ...store,
      eventLog: {
        ...store.eventLog,
        read: (treeId, from) => {
          if (from === 0) loads++
          return store.eventLog.read(treeId, from)
        },
        append: (treeId, expectedSeq, events) =>
          Effect.gen(function*() {
            if (self.failNext || self.failWhen?.(events) === true) {
              self.failNext = false
              self.failWhen = undefined
              return yield* new SessionStore.StoreError({ method: "append", description: "disk full" })
            }
            const hook = self.beforeResolve
            if (hook !== undefined && events.some((event) => event._tag === "CallbackResolved")) {
              self.beforeResolve = undefined
              yield* hook(store, treeId)
            }
            return yield* store.eventLog.append(treeId, expectedSeq, events)
          })
      }
    }
  }
  return self
})

const runtime = (store: SessionStore.Services, model: ScriptedModel.Service, options?: Engine.Options) =>
  (options === undefined ? LocalTransport.layer : LocalTransport.layerWith(options)).pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layerEmpty,
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ])
  )

const blockedOf = (state: TurnState.TurnState): TurnState.Blocked => {
  assert.strictEqual(state._tag, "Blocked")
  return state as TurnState.Blocked
}

/** A foreign process resolves the callback by appending to the store itself. */
const foreignResolution = (
  store: SessionStore.Services,
  treeId: Ids.SessionId,
  blocked: TurnState.Blocked,
  answer: Answer.Answer
) =>
  Effect.gen(function*() {
    const log = yield* store.eventLog.read(treeId, 0)
    const callback = blocked.callbacks[0]
    yield* store.eventLog.append(treeId, log.length, [
      new TurnEvent.CallbackResolved({
        sessionId: callback.sessionId,
        turnId: callback.turnId,
        seq: log.length,
        at: yield* DateTime.now,
        callbackId: callback.id,
        resolution: "answered",
        answer
      })
    ])
  })

/** A new session whose turn blocked on its approval, and the turn. */
const pausedTurn = Effect.gen(function*() {
  const session = yield* Agent.startSession(agent)
  const blocked = blockedOf(yield* Session.run(session, "What does the Atlas cost?"))
  const turn = yield* Session.turn(session, blocked.turnId)
  return { blocked, session, turn }
})

describe("Engine and store", () => {
  it.effect("a CallbackResolved appended to the store by another writer is noticed: the turn goes on", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const { blocked, session, turn } = yield* pausedTurn
        yield* foreignResolution(store.service, session.id, blocked, new Answer.AllowApproval())
        // The tool's handler (it comes with the agent) answers the client tool call that follows the approval.
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag, "Completed")
        if (state._tag === "Completed") assert.strictEqual(state.text, "The Atlas costs 1,200 EUR.")
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))

  it.effect("an append that loses a race is decided again: the answer that came first wins", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const { blocked, session, turn } = yield* pausedTurn
        // Just before the engine stores our answer, another process stores a denial.
        store.beforeResolve = (raw, treeId) =>
          foreignResolution(raw, treeId, blocked, new Answer.DenyApproval({ reason: "not today" })).pipe(Effect.orDie)
        const lost = yield* Effect.flip(Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()))
        assert.strictEqual(lost._tag, "CallbackAlreadyAnswered")
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag, "Completed")
        if (state._tag === "Completed") {
          assert.strictEqual(state.text, "No price: The user denied the call to lookup_price: not today.")
        }
        const resolved = (yield* store.service.eventLog.read(session.id, 0)).filter((event) =>
          event._tag === "CallbackResolved"
        )
        assert.strictEqual(resolved.length, 1)
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))

  it.effect("a store that fails an append gives a typed TransportFailure, changes nothing, and the engine goes on", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const { blocked, session, turn } = yield* pausedTurn
        const before = (yield* store.service.eventLog.read(session.id, 0)).length
        store.failNext = true
        const failed = yield* Effect.flip(Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()))
        assert.strictEqual(failed._tag, "TransportFailure")
        assert.include(failed.message, "disk full")
        assert.strictEqual((yield* store.service.eventLog.read(session.id, 0)).length, before)
        assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((callback) => callback.id), [
          blocked.callbacks[0].id
        ])
        // The same answer again: stored, and the turn completes.
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag, "Completed")
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))

  it.effect("a work item's result the store refused is stored later: the turn completes, nobody asked again", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        // The model's first step (its tool call) is refused once by the store.
        store.failWhen = (events) => events.some((event) => event._tag === "ToolCallStarted")
        const blocked = blockedOf(yield* Session.run(session, "What does the Atlas cost?"))
        assert.isUndefined(store.failWhen, "the store refused the step's result once")
        const turn = yield* Session.turn(session, blocked.turnId)
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag === "Completed" ? state.text : state._tag, "The Atlas costs 1,200 EUR.")
        assert.strictEqual((yield* model.calls).length, 2, "the step was not issued again")
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))

  it.effect("an idle tree is evicted once its time-to-live passes with nothing holding it; a call on it re-arms that", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const { blocked, turn } = yield* pausedTurn
        // Lets the timer fiber and the evictions it starts run.
        const settle = Effect.repeat(Effect.yieldNow, { times: 20 })
        const at = (label: string, loads: number) =>
          Effect.gen(function*() {
            yield* settle
            assert.deepStrictEqual((yield* Turn.openCallbacks(turn)).map((callback) => callback.id), [
              blocked.callbacks[0].id
            ], label)
            assert.strictEqual(store.loads(), loads, label)
          })
        yield* at("created here: never read back", 0)
        yield* TestClock.adjust("59 seconds")
        yield* at("59 s idle: still in memory", 0)
        yield* TestClock.adjust("2 seconds")
        yield* at("61 s idle: evicted, loaded again", 1)
        // A call that holds the tree (a refused answer) re-arms its eviction from its end.
        yield* TestClock.adjust("50 seconds")
        const refused = yield* Effect.flip(
          Turn.answer(turn, Ids.CallbackId.make("cb_nope"), new Answer.AllowApproval())
        )
        assert.strictEqual(refused._tag, "CallbackNotOpen")
        yield* TestClock.adjust("50 seconds")
        yield* at("50 s after the call: still in memory", 1)
        yield* TestClock.adjust("11 seconds")
        yield* at("61 s after the call: evicted, loaded again", 2)
      }).pipe(
        Effect.provide(runtime(store.service, model, { idleTimeToLive: "1 minute", pausedTimeToLive: "1 minute" }))
      )
    }))

  it.effect("a paused tree leaves memory soon (a second by default), a finished one stays; answered, it is loaded again", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const settle = Effect.repeat(Effect.yieldNow, { times: 20 })
        const { blocked, turn } = yield* pausedTurn
        yield* TestClock.adjust("900 millis")
        yield* settle
        assert.strictEqual(store.loads(), 0, "0.9 s paused: still in memory")
        yield* TestClock.adjust("200 millis")
        yield* settle
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        assert.strictEqual(store.loads(), 1, "1.1 s paused: evicted, loaded again by the answer")
        assert.strictEqual((yield* Turn.result(turn, { after: blocked }))._tag, "Completed")
        // Finished, the tree keeps the idle time-to-live (a minute).
        yield* TestClock.adjust("30 seconds")
        yield* settle
        yield* Turn.openCallbacks(turn)
        assert.strictEqual(store.loads(), 1, "finished 30 s ago: still in memory")
      }).pipe(Effect.provide(runtime(store.service, model, {})))
    }))

  it.effect("the idle trees held are bounded: past maxIdleTrees, the longest idle leaves at once", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const settle = Effect.repeat(Effect.yieldNow, { times: 20 })
        const first = yield* pausedTurn
        yield* pausedTurn
        yield* settle
        assert.strictEqual(store.loads(), 0, "two idle trees: both in memory")
        yield* pausedTurn
        yield* settle
        yield* Turn.openCallbacks(first.turn)
        assert.strictEqual(store.loads(), 1, "a third: the first left memory, and is loaded again")
      }).pipe(
        Effect.provide(runtime(store.service, model, { pausedTimeToLive: "1 minute", maxIdleTrees: 2 }))
      )
    }))

  it.effect("an idle tree leaves memory and is rebuilt from its log; a busy one stays", () =>
    Effect.gen(function*() {
      const evicting = yield* instrumented
      const keeping = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      const answerTwice = Effect.gen(function*() {
        const { blocked, turn } = yield* pausedTurn
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag, "Completed")
      })
      yield* answerTwice.pipe(Effect.provide(runtime(evicting.service, model, { idleTimeToLive: 0 })))
      yield* answerTwice.pipe(Effect.provide(runtime(keeping.service, model)))
      // With a time-to-live of 0 the paused tree is dropped between the run and the answer, and loaded again. With the
      // default one it stays in memory from its creation on: the engine that created it never reads it back.
      assert.isAbove(evicting.loads(), 1)
      assert.strictEqual(keeping.loads(), 0)
    }))

  it.effect("clients interrupted at any point never wedge a tree: later turns still block, answer and complete", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(turnBrain)
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        for (let k = 0; k < 12; k++) {
          // A run interrupted after k scheduler steps: before, during or after its message, its wait, its answer.
          const run = yield* Effect.forkChild(
            Effect.flatMap(
              Session.sendMessage(session, "What does the Atlas cost?"),
              (turn) =>
                Effect.flatMap(Turn.result(turn), (state) =>
                  state._tag === "Blocked"
                    ? Turn.answer(turn, state.callbacks[0].id, new Answer.AllowApproval())
                    : Effect.void)
            )
          )
          yield* Effect.repeat(Effect.yieldNow, { times: k })
          yield* Fiber.interrupt(run)
          yield* Session.cancel(session)
        }
        // The session is still sound: a new turn blocks on its approval, takes the answer and completes.
        const blocked = blockedOf(yield* Session.run(session, "What does the Atlas cost?"))
        assert.strictEqual(blocked.callbacks.length, 1)
        const turn = yield* Session.turn(session, blocked.turnId)
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        const state = yield* Turn.result(turn, { after: blocked })
        assert.strictEqual(state._tag, "Completed")
        // Every turn that was accepted ended, and every callback that opened was resolved exactly once.
        const log = yield* store.service.eventLog.read(session.id, 0)
        const queued = log.filter((event) => event._tag === "TurnQueued").length
        assert.strictEqual(log.filter((event) => event._tag === "TurnEnded").length, queued)
        const opened = log.filter((event) => event._tag === "CallbackOpened").length
        assert.strictEqual(log.filter((event) => event._tag === "CallbackResolved").length, opened)
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))

  it.live("work that reported its result is not started again while a slow batch is decided", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      // I/O that takes event-loop turns, as a database's does: a batch is still being decided when a step finishes.
      const io = Effect.repeat(
        Effect.callback<void>((resume) => void setImmediate(() => resume(Effect.void))),
        { times: 3 }
      )
      const slow: SessionStore.Services = {
        ...memory,
        eventLog: {
          ...memory.eventLog,
          append: (treeId, expectedSeq, events) =>
            Effect.andThen(io, memory.eventLog.append(treeId, expectedSeq, events)),
          read: (treeId, from) => Effect.andThen(io, memory.eventLog.read(treeId, from))
        }
      }
      const tree: { id: Ids.SessionId | undefined } = { id: undefined }
      // While its first step runs, another writer appends to the tree: the engine takes that batch up meanwhile.
      const foreignWhileThinking = (call: ScriptedModel.Call) =>
        Effect.gen(function*() {
          if (call.index === 0 && tree.id !== undefined) {
            const treeId = tree.id
            const log = yield* memory.eventLog.read(treeId, 0)
            yield* memory.eventLog.append(treeId, log.length, [
              new TurnEvent.TurnQueued({
                sessionId: treeId,
                turnId: Ids.TurnId.make(`turn_foreign_${log.length}`),
                seq: log.length,
                at: yield* DateTime.now,
                input: "and the Nova?"
              })
            ])
          }
          return brain(call)
        }).pipe(Effect.orDie)
      const model = yield* ScriptedModel.fromFunction(foreignWhileThinking)
      yield* Effect.gen(function*() {
        const session = yield* Agent.startSession(agent)
        tree.id = session.id
        const blocked = blockedOf(yield* Session.run(session, "What does the Atlas cost?"))
        assert.strictEqual(blocked.callbacks.length, 1)
      }).pipe(Effect.provide(runtime(slow, model)))
      // One model step so far — the call that asked for lookup_price — issued once.
      assert.strictEqual((yield* model.calls).length, 1)
    }))

  it.effect("an engine whose copy of a tree lags behind reads the log before refusing a turn or a callback", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      // Engine B hears of no appends (as when another process's commit has not reached its poll yet).
      const deaf: SessionStore.Services = {
        ...store.service,
        eventLog: {
          ...store.service.eventLog,
          changes: () => Queue.make<SessionStore.Change, SessionStore.StoreError | Cause.Done>()
        }
      }
      const modelA = yield* ScriptedModel.fromFunction(brain)
      const modelB = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        // Each engine built once: B keeps the copy it loaded.
        const a = yield* Layer.build(runtime(store.service, modelA))
        // B only answers: the tree's owner is A, whichever engine loads it first.
        const b = yield* Layer.build(runtime(deaf, modelB, { runsWork: false }))
        const session = yield* Agent.startSession(agent).pipe(Effect.provide(a))
        // B loads the tree while it holds no turn yet.
        yield* Agent.session(agent, session.id).pipe(Effect.provide(b))
        const blocked = blockedOf(yield* Session.run(session, "What does the Atlas cost?").pipe(Effect.provide(a)))
        // B finds the turn and the approval it did not know of, and its answer goes through.
        yield* Effect.gen(function*() {
          const turn = yield* Session.turn(session, blocked.turnId)
          yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
        }).pipe(Effect.provide(b))
        const state = yield* Effect.flatMap(
          Session.turn(session, blocked.turnId),
          (turn) => Turn.result(turn, { after: blocked })
        ).pipe(Effect.provide(a))
        assert.strictEqual(state._tag, "Completed")
      }).pipe(Effect.scoped)
    }))

  it.live("a wait in a process that only follows the tree sees its turn Blocked by the owner's decision", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      // W hears of no appends (as between two polls of another process's store): its copy of the tree lags, while
      // the events of its wait come from the store.
      const deaf: SessionStore.Services = {
        ...store,
        eventLog: {
          ...store.eventLog,
          changes: () => Queue.make<SessionStore.Change, SessionStore.StoreError | Cause.Done>()
        }
      }
      const owner = yield* ScriptedModel.fromFunction(brain)
      const unused = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const o = yield* Layer.build(runtime(store, owner))
        const w = yield* Layer.build(runtime(deaf, unused, { runsWork: false }))
        const session = yield* Agent.startSession(agent).pipe(Effect.provide(o))
        // W sends the message and waits; O runs the step and blocks the turn on its approval.
        const state = yield* Session.run(session, "What does the Atlas cost?").pipe(
          Effect.provide(w),
          Effect.timeoutOrElse({
            duration: "5 seconds",
            orElse: () => Effect.fail(new Error("W's wait did not return"))
          })
        )
        assert.strictEqual(blockedOf(state).callbacks.length, 1)
        assert.strictEqual((yield* unused.calls).length, 0)
        assert.strictEqual((yield* owner.calls).length, 1)
      }).pipe(Effect.scoped)
    }))

  it.effect("malformed ids from another process are typed errors", () =>
    Effect.gen(function*() {
      const store = yield* instrumented
      const model = yield* ScriptedModel.fromFunction(brain)
      yield* Effect.gen(function*() {
        const missing = yield* Effect.flip(Agent.session(agent, "ses_nobody"))
        assert.strictEqual(missing._tag, "SessionNotFound")
        assert.deepStrictEqual(yield* store.service.eventLog.treeOf(Ids.SessionId.make("ses_nobody")), Option.none())
      }).pipe(Effect.provide(runtime(store.service, model)))
    }))
})
