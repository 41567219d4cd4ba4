import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent } from "@parley/core"
import { Agent, AgentSpec, Answer, Inbox, Session, Turn } from "@parley/core"
import type { Engine } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import type { Cause } from "effect"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Queue, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"

// One owner per tree (issue 9, point 5): the engine that claims a tree runs its work under a lease; an engine that
// finds a tree owned by another live engine follows it (answers, lists, reads) and runs nothing; once the owner's
// heartbeat lapses, it takes the tree over and resumes it; a deposed owner's late result is fenced off. At start, an
// engine takes up the unfinished trees it may claim, with nobody asking (recovery, point 3).

const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
      Effect.andThen(Effect.sync(() => assert.fail(`${what}: still waiting after ${seconds} s (real time)`)))
    )
  )

const engine = (
  store: SessionStore.Services,
  model: ScriptedModel.Service,
  options: Engine.Options,
  tools: Layer.Layer<RuntimeTools.RuntimeTools> = RuntimeTools.layerEmpty
) =>
  LocalTransport.layerWith(options).pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layerEmpty,
      tools,
      Models.layer(Models.single(model.languageModel))
    ])
  )

/** Builds an engine in a scope of its own, closed by the returned effect (a process that stops). */
const start = (
  store: SessionStore.Services,
  model: ScriptedModel.Service,
  options: Engine.Options,
  tools?: Layer.Layer<RuntimeTools.RuntimeTools>
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(engine(store, model, options, tools), scope)
    return {
      provide: Effect.provide(context),
      stop: Scope.close(scope, Exit.void)
    }
  })

const greeter = Agent.make({ name: "greeter", model: "scripted", instructions: "Greet." })

const PRICES: Record<string, string> = { atlas: "1,200 EUR" }
const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, ({ product }) => ({ price: PRICES[product.toLowerCase()] ?? "unknown" }))
const pricerOptions = {
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  permissionMode: "ask",
  tools: [lookupPrice]
} as const
const pricer = Agent.make(pricerOptions)
const pricerBrain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const price = ScriptedModel.toolResults(call).find((result) => result.name === "lookup_price")
  if (price === undefined) return ScriptedModel.toolCall("lookup_price", { product: "Atlas" })
  return ScriptedModel.text(`The Atlas costs ${(price.result as { readonly price: string }).price}.`)
}

/** A model whose every call waits forever (a step in flight when its engine stops). */
const stuck = ScriptedModel.fromFunction(() => Effect.never)

const tagsOf = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((event) => event._tag)

/** Waits (in real time) until the tree's log has an event of `tag`. */
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

describe("Leases: one owner per tree", () => {
  it.effect("at start, an engine takes up the unfinished trees of its name: a step in flight is issued again", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* start(store, yield* stuck, { owner: "engine-1" })
      const turn = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      yield* waitFor(store, turn.sessionId, "ModelStepStarted")
      yield* a.stop
      const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello there!"))
      // Nobody calls the new engine: starting it is enough.
      const b = yield* start(store, model, { owner: "engine-1" })
      const events = yield* waitFor(store, turn.sessionId, "TurnEnded")
      yield* b.stop
      assert.deepStrictEqual(tagsOf(events), [
        "TurnQueued",
        "TurnStarted",
        "ModelStepStarted",
        "MessageAborted",
        "ModelStepStarted",
        "MessageCompleted",
        "TurnEnded"
      ])
      const ended = events[events.length - 1]
      assert.strictEqual(ended._tag === "TurnEnded" ? ended.state._tag : "", "Completed")
    }))

  it.effect("a tree owned by a live engine is followed, not run; once the owner's lease lapses it is taken over", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* start(store, yield* stuck, { owner: "engine-a" })
      const turn = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      yield* waitFor(store, turn.sessionId, "ModelStepStarted")
      // Engine A dies without a word: its scope closes (so it runs nothing more), but its last heartbeat still holds.
      yield* a.stop
      yield* store.leases.heartbeat("engine-a", Duration.seconds(10))
      yield* store.leases.claim(turn.sessionId, "engine-a")

      const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello there!"))
      const b = yield* start(store, model, { owner: "engine-b", leaseTtl: "1 second" })
      const snapshot = yield* b.provide(
        Effect.flatMap(
          Agent.session(greeter, turn.sessionId),
          (session) =>
            Effect.flatMap(
              Session.turn(session, turn.turnId),
              (found) => Effect.flatMap(Turn.openCallbacks(found), () => Effect.succeed(found))
            )
        )
      )
      assert.strictEqual(snapshot.turnId, turn.turnId, "B reads the tree as a follower")
      yield* TestClock.withLive(Effect.sleep("50 millis"))
      assert.strictEqual((yield* model.calls).length, 0, "B runs nothing while A's lease holds")
      assert.notInclude(tagsOf(yield* store.eventLog.read(turn.sessionId, 0)), "MessageAborted")

      // A's lease lapses: B's next sweep claims the tree (epoch 2) and resumes it.
      yield* TestClock.adjust("11 seconds")
      const events = yield* waitFor(store, turn.sessionId, "TurnEnded")
      yield* b.stop
      assert.deepStrictEqual(tagsOf(events).slice(2), [
        "ModelStepStarted",
        "MessageAborted",
        "ModelStepStarted",
        "MessageCompleted",
        "TurnEnded"
      ])
      assert.strictEqual((yield* model.calls).length, 1)
    }))

  it.effect("a follower's answer is taken up by the owner, which runs the tool and completes the turn", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const ownerModel = yield* ScriptedModel.fromFunction(pricerBrain)
      const a = yield* start(store, ownerModel, { owner: "engine-a" })
      const followerModel = yield* ScriptedModel.fromFunction(pricerBrain)
      const b = yield* start(store, followerModel, { owner: "engine-b", runsWork: false })
      const state = yield* a.provide(Agent.run(pricer, "What does the Atlas cost?"))
      assert.strictEqual(state._tag, "Blocked")
      // B lists what is open across the store, and answers by id.
      const open = yield* b.provide(Inbox.listOpen({ kind: "approval" }))
      assert.deepStrictEqual(open.map((entry) => entry.callback.sessionId), [state.sessionId])
      // With the JSON Schema of the answer it expects (allow or deny).
      assert.include(JSON.stringify(open[0].answerSchema), `"enum":["AllowApproval"]`)
      assert.include(JSON.stringify(open[0].answerSchema), `"enum":["DenyApproval"]`)
      yield* b.provide(Inbox.answer(open[0], new Answer.AllowApproval()))
      // A runs the rest (the tool's handler comes with the agent; A's client waits with it).
      const final = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.session(pricer, state.sessionId)
        const turn = yield* Session.turn(session, state.turnId)
        return yield* within("A's Turn.result", Turn.result(turn))
      }))
      yield* b.stop
      yield* a.stop
      assert.strictEqual(final._tag === "Completed" ? final.text : final._tag, "The Atlas costs 1,200 EUR.")
      assert.strictEqual((yield* followerModel.calls).length, 0, "the follower never called a model")
      assert.strictEqual((yield* ownerModel.calls).length, 2)
      assert.deepStrictEqual(yield* b.provide(Inbox.listOpen()), [])
    }))

  it.effect("a deposed owner's late result is fenced off: it writes nothing and stops", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const release = yield* Deferred.make<void>()
      const model = yield* ScriptedModel.fromFunction(() =>
        Effect.as(Deferred.await(release), ScriptedModel.text("Too late."))
      )
      const a = yield* start(store, model, { owner: "engine-a" })
      const turn = yield* a.provide(Effect.gen(function*() {
        const session = yield* Agent.startSession(greeter)
        return yield* Session.sendMessage(session, "Hello.")
      }))
      const before = yield* waitFor(store, turn.sessionId, "ModelStepStarted")
      // Another engine takes the tree over (A's lease is gone: it retired, as after a partition).
      yield* store.leases.retire("engine-a")
      const taken = yield* store.leases.claim(turn.sessionId, "engine-z")
      assert.deepStrictEqual(taken._tag === "Some" ? taken.value.epoch : 0, 2)
      yield* Deferred.succeed(release, undefined)
      yield* TestClock.withLive(Effect.sleep("50 millis"))
      assert.deepStrictEqual(
        tagsOf(yield* store.eventLog.read(turn.sessionId, 0)),
        tagsOf(before),
        "A's result was not stored"
      )
      // A still reads the tree (as a follower).
      const ref = yield* a.provide(
        Effect.flatMap(Agent.session(greeter, turn.sessionId), (session) => Session.turn(session, turn.turnId))
      )
      assert.strictEqual(ref.turnId, turn.turnId)
      yield* a.stop
    }))

  it.effect("listOpen decodes its filter: a malformed one is a typed TransportFailure", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* start(store, yield* ScriptedModel.fromFunction(pricerBrain), { owner: "engine-a" })
      const malformed = [{ kind: "telepathy" }, { sessionId: 42 }, { kind: null }] as unknown as ReadonlyArray<
        Parameters<typeof Inbox.listOpen>[0]
      >
      const failures = yield* a.provide(Effect.forEach(malformed, (filter) => Effect.flip(Inbox.listOpen(filter))))
      yield* a.stop
      assert.deepStrictEqual(failures.map((error) => error._tag), [
        "TransportFailure",
        "TransportFailure",
        "TransportFailure"
      ])
      assert.include(failures[0].message, "not a kind of callback: telepathy")
    }))

  it.effect("a tree taken over while its follower appends runs nothing before it resumes: a started tool never runs twice", () =>
    Effect.gen(function*() {
      // Engine A dies while `charge` (not idempotent) runs. Engine B follows the tree, and takes it over once A's lease
      // lapses, while one of B's appends as a follower is in flight. The work B starts after that append waits for
      // B's Resume, which reports the charge as interrupted: it never runs again.
      const memory = yield* SessionStore.makeMemory
      let runs = 0
      const charge = (rest: Effect.Effect<void>) =>
        Tool.make("charge", {
          description: "Charges the customer.",
          success: Schema.Struct({ charged: Schema.Boolean })
        }, () => Effect.sync(() => runs++).pipe(Effect.andThen(rest), Effect.as({ charged: true })))
      const charger = Agent.make({
        name: "charger",
        model: "scripted",
        instructions: "Charge.",
        tools: [charge(Effect.void)]
      })
      const brain = (call: ScriptedModel.Call) =>
        ScriptedModel.lastUserText(call) === "Charge." && ScriptedModel.toolResults(call).length === 0
          ? ScriptedModel.toolCall("charge", {})
          : ScriptedModel.text("Done.")
      const a = yield* start(
        memory,
        yield* ScriptedModel.fromFunction(brain),
        { owner: "engine-a" },
        RuntimeTools.layer(charge(Effect.never))
      )
      const session = yield* a.provide(Agent.startSession(charger))
      const turn = yield* a.provide(Session.sendMessage(session, "Charge."))
      yield* waitFor(memory, turn.sessionId, "ToolExecutionStarted")
      // A dies with the charge running; its lease still holds for 10 seconds.
      yield* a.stop
      yield* memory.leases.heartbeat("engine-a", Duration.seconds(10))
      yield* memory.leases.claim(turn.sessionId, "engine-a")
      assert.strictEqual(runs, 1)

      // B's appends wait at a gate while it is closed; B's claims are reported.
      const gate = yield* Deferred.make<void>()
      const waiting = yield* Deferred.make<void>()
      const claimed = yield* Deferred.make<void>()
      let gated = false
      const store: SessionStore.Services = {
        ...memory,
        eventLog: {
          ...memory.eventLog,
          append: (treeId, expectedSeq, events, lease) =>
            Effect.suspend(() =>
              gated
                ? Effect.andThen(Deferred.succeed(waiting, undefined), Deferred.await(gate))
                : Effect.void
            ).pipe(Effect.andThen(memory.eventLog.append(treeId, expectedSeq, events, lease)))
        },
        leases: {
          ...memory.leases,
          claim: (treeId, owner) =>
            Effect.tap(
              memory.leases.claim(treeId, owner),
              (lease) =>
                lease._tag === "Some" && owner === "engine-b" ? Deferred.succeed(claimed, undefined) : Effect.void
            )
        }
      }
      const b = yield* start(store, yield* ScriptedModel.fromFunction(brain), {
        owner: "engine-b",
        leaseTtl: "1 second"
      }, RuntimeTools.layer(charge(Effect.void)))
      // B follows the tree, and sends it a message whose append waits at the gate.
      const follower = yield* b.provide(Agent.session(charger, turn.sessionId))
      gated = true
      const again = yield* b.provide(Effect.forkChild(Session.sendMessage(follower, "Again.")))
      yield* within("B's append at the gate", Deferred.await(waiting))
      // A's lease lapses: B claims the tree while its append is in flight.
      yield* TestClock.adjust("11 seconds")
      yield* within("B's claim", Deferred.await(claimed))
      gated = false
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(again)
      const events = yield* waitFor(memory, turn.sessionId, "TurnEnded")
      yield* TestClock.withLive(Effect.sleep("50 millis"))
      yield* b.stop
      assert.strictEqual(runs, 1, "the charge that started in A never runs again")
      const completed = events.find((event) => event._tag === "ToolCallCompleted")
      assert.include(completed?._tag === "ToolCallCompleted" ? String(completed.result) : "", "interrupted")
    }))

  it.effect("listOpen reads in a callback the store lists before this process's view of the tree has it", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const a = yield* start(store, yield* ScriptedModel.fromFunction(pricerBrain), { owner: "engine-a" })
      // B hears of no append (as between two polls of another process's store).
      const deaf: SessionStore.Services = {
        ...store,
        eventLog: {
          ...store.eventLog,
          changes: () => Queue.make<SessionStore.Change, SessionStore.StoreError | Cause.Done>()
        }
      }
      const b = yield* start(deaf, yield* ScriptedModel.fromFunction(pricerBrain), { runsWork: false })
      const session = yield* a.provide(Agent.startSession(pricer))
      // B loads the tree while it has no callback yet.
      yield* b.provide(Effect.flatMap(Agent.session(pricer, session.id), () => Inbox.listOpen()))
      const state = yield* a.provide(Session.run(session, "What does the Atlas cost?"))
      assert.strictEqual(state._tag, "Blocked")
      const open = yield* b.provide(Inbox.listOpen({ sessionId: session.id }))
      assert.deepStrictEqual(
        open.map((entry) => entry.callback.id),
        state._tag === "Blocked" ? state.callbacks.map((callback) => callback.id) : []
      )
      yield* b.stop
      yield* a.stop
    }))

  it.effect("the engine that creates a session owns its tree, even when another engine reads it first", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const modelA = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello from A."))
      const modelB = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello from B."))
      const a = yield* start(store, modelA, { owner: "engine-a" })
      const b = yield* start(store, modelB, { owner: "engine-b" })
      const session = yield* a.provide(Agent.startSession(greeter))
      yield* b.provide(Agent.session(greeter, session.id))
      const state = yield* a.provide(within("A's run", Session.run(session, "Hello.")))
      yield* b.stop
      yield* a.stop
      assert.strictEqual(state._tag === "Completed" ? state.text : state._tag, "Hello from A.")
      assert.deepStrictEqual([(yield* modelA.calls).length, (yield* modelB.calls).length], [1, 0])
    }))

  it.effect(
    "at start, paused trees are claimed without being loaded; an answer from another process resumes one in the new " +
      "owner, a deadline expires another there",
    () =>
      Effect.gen(function*() {
        const memory = yield* SessionStore.makeMemory
        const loaded = new Set<string>()
        const claimed = yield* Deferred.make<void>()
        const store: SessionStore.Services = {
          ...memory,
          eventLog: {
            ...memory.eventLog,
            read: (treeId, from) =>
              Effect.andThen(Effect.sync(() => loaded.add(treeId)), memory.eventLog.read(treeId, from))
          },
          snapshots: {
            ...memory.snapshots,
            load: (treeId) => Effect.andThen(Effect.sync(() => loaded.add(treeId)), memory.snapshots.load(treeId))
          },
          leases: {
            ...memory.leases,
            claimPaused: (owner, own) =>
              Effect.tap(memory.leases.claimPaused(owner, own), () => Deferred.succeed(claimed, undefined))
          }
        }
        const patient = Agent.make({
          ...pricerOptions,
          name: "patient",
          timeouts: new AgentSpec.CallbackTimeouts({ approval: Duration.minutes(5) })
        })
        // Engine A leaves two trees paused on their approvals, and stops.
        const a = yield* start(store, yield* ScriptedModel.fromFunction(pricerBrain), { owner: "engine-a" })
        const answered = yield* a.provide(Agent.run(pricer, "What does the Atlas cost?"))
        const expiring = yield* a.provide(Agent.run(patient, "What does the Atlas cost?"))
        assert.deepStrictEqual([answered._tag, expiring._tag], ["Blocked", "Blocked"])
        yield* a.stop

        // Engine B starts: it claims both in one go and loads neither.
        loaded.clear()
        const model = yield* ScriptedModel.fromFunction(pricerBrain)
        const b = yield* start(store, model, { owner: "engine-b" })
        yield* within("B's claim of the paused trees", Deferred.await(claimed))
        yield* TestClock.withLive(Effect.sleep("50 millis"))
        assert.deepStrictEqual([...loaded], [], "no paused tree was loaded")
        assert.deepStrictEqual((yield* store.leases.claimPaused("engine-c", true)).trees, [], "B holds them")

        // Answered from another process (an engine that runs no work): B loads that tree, runs the tool, completes.
        const c = yield* start(store, yield* ScriptedModel.fromFunction(pricerBrain), {
          owner: "engine-c",
          runsWork: false
        })
        const [open] = yield* c.provide(Inbox.listOpen({ sessionId: answered.sessionId }))
        yield* c.provide(Inbox.answer(open, new Answer.AllowApproval()))
        // The tool runs where its handler is (C's program, as the client of the turn); B runs the model.
        const final = yield* c.provide(Effect.gen(function*() {
          const session = yield* Agent.session(pricer, answered.sessionId)
          return yield* within("C's Turn.result", Turn.result(yield* Session.turn(session, answered.turnId)))
        }))
        assert.strictEqual(final._tag === "Completed" ? final.text : final._tag, "The Atlas costs 1,200 EUR.")
        assert.strictEqual((yield* model.calls).length, 1, "B made the answered tree's last model step")

        // The other one's deadline passes: B expires its approval (its deadline came with the claim).
        assert.isFalse(loaded.has(expiring.sessionId))
        yield* TestClock.adjust("6 minutes")
        const expired = yield* waitFor(store, expiring.sessionId, "TurnEnded")
        assert.include(
          expired.flatMap((event) => event._tag === "CallbackResolved" ? [event.resolution] : []),
          "expired"
        )
        yield* c.stop
        yield* b.stop
      })
  )

  it.live(
    "a tool is begun only while the lease holds by the clock: with the heartbeat failing, the engine claims the tree " +
      "again and the call is settled interrupted, never run",
    () =>
      Effect.gen(function*() {
        for (const failing of [false, true]) {
          const memory = yield* SessionStore.makeMemory
          let beats = 0
          const store: SessionStore.Services = {
            ...memory,
            leases: {
              ...memory.leases,
              // The first heartbeat goes through; with `failing`, every later one fails (a store the engine cannot
              // reach, or a process too starved to renew): the lease lapses 300 ms after it began.
              heartbeat: (owner, ttl) =>
                beats++ > 0 && failing
                  ? Effect.fail(new SessionStore.StoreError({ method: "heartbeat", description: "unreachable" }))
                  : memory.leases.heartbeat(owner, ttl)
            }
          }
          let runs = 0
          const counted = Tool.make("lookup_price", {
            description: "Price of one product.",
            parameters: { product: Schema.String },
            success: Schema.Struct({ price: Schema.String })
          }, () => {
            runs++
            return { price: "1,200 EUR" }
          })
          const allowed = Agent.make({ ...pricerOptions, permissionMode: "allow", tools: [counted] })
          // The model's first step takes longer than the lease: the tool call comes after the lease began to lapse.
          const model = yield* ScriptedModel.fromFunction((call) =>
            ScriptedModel.toolResults(call).length === 0
              ? Effect.as(Effect.sleep("700 millis"), ScriptedModel.toolCall("lookup_price", { product: "Atlas" }))
              : pricerBrain(call)
          )
          const a = yield* start(
            store,
            model,
            { owner: "engine-a", leaseTtl: "300 millis" },
            RuntimeTools.layer(counted)
          )
          const state = yield* a.provide(Effect.timeout(Agent.run(allowed, "How much is the Atlas?"), "20 seconds"))
          assert.strictEqual(state._tag, "Completed", String(failing))
          const sessionId = state.sessionId
          const events = yield* memory.eventLog.read(sessionId, 0)
          const completed = events.flatMap((event) => event._tag === "ToolCallCompleted" ? [event] : [])
          assert.strictEqual(completed.length, 1)
          if (failing) {
            assert.strictEqual(runs, 0, "the tool never ran")
            assert.isTrue(completed[0].isFailure)
            assert.match(JSON.stringify(completed[0].result), /may or may not have run/)
          } else {
            assert.strictEqual(runs, 1)
            assert.isFalse(completed[0].isFailure)
          }
          yield* a.stop
        }
      }),
    { timeout: 60_000 }
  )

  it.effect("lease upkeep runs on the wall clock: an hour of simulated time costs no heartbeat and no take-over scan", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      let beats = 0
      let scans = 0
      const store: SessionStore.Services = {
        ...memory,
        leases: {
          ...memory.leases,
          heartbeat: (owner, ttl) => Effect.andThen(Effect.sync(() => beats++), memory.leases.heartbeat(owner, ttl)),
          unfinished: (owner) => Effect.andThen(Effect.sync(() => scans++), memory.leases.unfinished(owner))
        }
      }
      const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("Hello."))
      const a = yield* start(store, model, { owner: "engine-a", leaseTtl: "10 seconds" })
      // The first take-over scan runs in the background once the engine started: wait for it (a loaded machine may
      // take a while), then count.
      yield* within(
        "the first scan",
        Effect.repeat(TestClock.withLive(Effect.sleep("10 millis")), { until: () => scans > 0 })
      )
      yield* TestClock.withLive(Effect.sleep("20 millis"))
      const before = [beats, scans]
      yield* TestClock.adjust("1 hour")
      yield* TestClock.withLive(Effect.sleep("20 millis"))
      assert.deepStrictEqual([beats, scans], before)
      // The engine still works after the jump.
      const state = yield* a.provide(within("a run after the jump", Agent.run(greeter, "Hello.")))
      assert.strictEqual(state._tag, "Completed")
      yield* a.stop
    }))
})
