import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Permissions, Session, ToolSpec, Turn } from "@parley/core"
import { SnapshotCodec, TreeState } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Duration, Effect, Layer, Logger, Option } from "effect"
import { TestClock } from "effect/testing"

// Snapshots of the projection in the engine (issue 9): a tree is loaded from its latest snapshot and the events after
// it; the engine saves snapshots in the background as the log grows; a snapshot it cannot use is ignored (a warning)
// and the log replayed from seq 0; a save that fails or never ends changes nothing for the turns.

/** `effect`, failed when it has not finished after `seconds` of real time (a `TestClock` never moves by itself). */
const within = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, seconds = 5): Effect.Effect<A, E, R> =>
  Effect.raceFirst(
    effect,
    TestClock.withLive(Effect.sleep(Duration.seconds(seconds))).pipe(
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

/** An engine over `store` whose agents run on `model`. */
const engine = (store: SessionStore.Services, model: ScriptedModel.Service, snapshotEvery?: number) =>
  LocalTransport.layerWith({ snapshotEvery }).pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layerEmpty,
      RuntimeTools.layerEmpty,
      Models.layer(Models.single(model.languageModel))
    ])
  )

/** `store`, recording the `from` of every `read` and how many events it returned. */
const counting = (store: SessionStore.Services) => {
  const reads: Array<{ readonly from: number; readonly events: number }> = []
  const service: SessionStore.Services = {
    ...store,
    eventLog: {
      ...store.eventLog,
      read: (treeId, from) =>
        Effect.tap(
          store.eventLog.read(treeId, from),
          (events) => Effect.sync(() => reads.push({ from, events: events.length }))
        )
    }
  }
  return { reads, store: service }
}

/** The warnings logged by the effect's fibers (and the fibers they fork). */
const warnings = () => {
  const logged: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === "Warn") logged.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
  })
  return { logged, layer: Logger.layer([logger]) }
}

// ----- a client tool call: get_location (answered by the program), after a few greetings -----

const getLocation = new ToolSpec.ToolSpec({
  id: "client.get_location" as ToolSpec.ToolSpec["id"],
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: {} },
  annotations: new ToolSpec.ToolAnnotations({ readOnlyHint: true })
})

const locator = Agent.make({
  name: "locator",
  model: "scripted",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  permissions: new Permissions.PermissionPolicy({ default: "allow" })
})

const WHERE = "Where am I?"

/** Greets (counting the greetings so far) unless asked where; then calls get_location and says where, and how many. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const user = ScriptedModel.lastUserText(call)
  const greetings = call.prompt.content.filter((message) => message.role === "user").length
  if (user !== WHERE) return ScriptedModel.text(`Hello #${greetings}.`)
  const located = ScriptedModel.toolResults(call).find((result) => result.name === "get_location")
  if (located === undefined) return ScriptedModel.toolCall("get_location", {})
  const where = located.result as { readonly city: string }
  return ScriptedModel.text(`You're in ${where.city}, after ${greetings - 1} greetings.`)
}

const lyon = Answer.ClientToolResult.success({ city: "Lyon" })

/**
 * Engine A greets `greetings` times, then blocks on get_location and stops (once it saved the last snapshot due,
 * unless `awaitSnapshot` is false). Returns the blocked turn and the log's length.
 */
const runUntilBlocked = (
  store: SessionStore.Services,
  greetings: number,
  snapshotEvery?: number,
  awaitSnapshot = true
) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    const blocked = yield* Effect.gen(function*() {
      const session = yield* Agent.startSession(locator)
      for (let i = 0; i < greetings; i++) {
        stateAs(yield* within("a greeting", Session.run(session, `Hi ${i}`)), "Completed")
      }
      const blocked = stateAs(yield* within("the question", Session.run(session, WHERE)), "Blocked")
      // The engine saves its snapshots in the background and stops when it closes (a save is never waited for): it
      // stays open until it saved the last one due.
      if (awaitSnapshot && snapshotEvery !== undefined && snapshotEvery > 0) {
        const stored = yield* store.eventLog.read(blocked.sessionId, 0)
        yield* snapshotAt(store, blocked, stored.length - snapshotEvery + 1)
      }
      return blocked
    }).pipe(Effect.provide(engine(store, model, snapshotEvery)))
    const log = yield* store.eventLog.read(blocked.sessionId, 0)
    return { blocked, length: log.length }
  })

/** Engine B answers the blocked turn's call with Lyon and waits for its end. */
const answerInB = (store: SessionStore.Services, blocked: TurnState.Blocked, snapshotEvery?: number) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* Effect.gen(function*() {
      const session = yield* Agent.session(locator, blocked.sessionId)
      const turn = yield* Session.turn(session, blocked.turnId)
      const open = yield* Turn.openCallbacks(turn)
      assert.deepStrictEqual(open.map((callback) => callback.id), blocked.callbacks.map((callback) => callback.id))
      yield* Turn.answer(turn, open[0].id, lyon)
      return yield* within("engine B's Turn.result", Turn.result(turn, { after: blocked }))
    }).pipe(Effect.provide(engine(store, model, snapshotEvery)))
  })

/** Waits until the tree's stored snapshot has reached `seq`. */
const snapshotAt = (store: SessionStore.Services, blocked: TurnState.Blocked, seq: number) =>
  within(
    "the snapshot",
    Effect.gen(function*() {
      while (true) {
        const snapshot = yield* store.snapshots.load(blocked.sessionId)
        if (Option.isSome(snapshot) && snapshot.value.seq >= seq) return snapshot.value
        yield* TestClock.withLive(Effect.sleep("5 millis"))
      }
    })
  )

const EXPECTED = "You're in Lyon, after 6 greetings."

describe("Snapshots", () => {
  it.effect("a restarted engine loads the tree from its snapshot and the events after it, and goes on the same", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const { blocked, length } = yield* runUntilBlocked(memory, 6, 10)
      // Six greetings of 5 events, then the question: the snapshots follow the log 10 events at a time at least.
      assert.isAbove(length, 30)
      const snapshot = yield* snapshotAt(memory, blocked, length - 10)
      assert.strictEqual(snapshot.version, SnapshotCodec.version)
      const { reads, store } = counting(memory)
      const final = yield* answerInB(store, blocked, 10)
      assert.strictEqual(stateAs(final, "Completed").text, EXPECTED)
      assert.strictEqual(reads[0].from, snapshot.seq, "the load reads from the snapshot on")
      assert.isTrue(reads.every((read) => read.from >= snapshot.seq), JSON.stringify(reads))
      assert.strictEqual(reads[0].events, length - snapshot.seq)
    }))

  it.effect("the state restored from a snapshot is the fold of the whole log", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const { blocked, length } = yield* runUntilBlocked(store, 3, 1)
      const snapshot = yield* snapshotAt(store, blocked, length)
      const restored = SnapshotCodec.decode(snapshot.state)
      assert.isTrue(restored._tag === "Success")
      const header = Option.getOrThrow(yield* store.eventLog.getTree(blocked.sessionId))
      const folded = TreeState.fold(header, yield* store.eventLog.read(blocked.sessionId, 0))
      if (restored._tag === "Success") {
        assert.strictEqual(restored.success.nextSeq, folded.nextSeq)
        assert.deepStrictEqual(
          TreeState.session(restored.success, blocked.sessionId)?.conversation,
          TreeState.session(folded, blocked.sessionId)?.conversation
        )
        assert.deepStrictEqual(TreeState.turnState(restored.success, blocked.turnId), blocked)
      }
    }))

  const unusable: ReadonlyArray<
    readonly [string, (snapshot: SessionStore.Snapshot) => SessionStore.Snapshot, string]
  > = [
    ["another version", (snapshot) => ({ ...snapshot, version: snapshot.version + 1 }), "has version"],
    [
      "a state that does not decode",
      (snapshot) => ({ ...snapshot, state: "{\"nextSeq\":\"oops\"}" }),
      "does not decode"
    ],
    ["text that is no JSON", (snapshot) => ({ ...snapshot, state: "not json" }), "does not decode"],
    ["a state that does not end at its seq", (snapshot) => ({ ...snapshot, seq: snapshot.seq + 1 }), "ends at seq"]
  ]
  for (const [what, spoil, reason] of unusable) {
    it.effect(`a snapshot with ${what} is ignored with a warning: the log is replayed from seq 0`, () =>
      Effect.gen(function*() {
        const memory = yield* SessionStore.makeMemory
        const { blocked, length } = yield* runUntilBlocked(memory, 6, 1)
        const snapshot = yield* snapshotAt(memory, blocked, length)
        yield* memory.snapshots.save(blocked.sessionId, spoil(snapshot))
        const { reads, store } = counting(memory)
        const { layer, logged } = warnings()
        const final = yield* answerInB(store, blocked, 0).pipe(Effect.provide(layer))
        assert.strictEqual(stateAs(final, "Completed").text, EXPECTED)
        assert.deepStrictEqual(reads[0], { from: 0, events: length })
        assert.isTrue(logged.some((line) => line.includes("is ignored") && line.includes(reason)), logged.join("\n"))
      }))
  }

  it.effect("snapshotEvery: 0 saves none", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      const { blocked } = yield* runUntilBlocked(store, 3, 0)
      const final = yield* answerInB(store, blocked, 0)
      assert.strictEqual(stateAs(final, "Completed").text, "You're in Lyon, after 3 greetings.")
      assert.deepStrictEqual(yield* store.snapshots.load(blocked.sessionId), Option.none())
    }))

  it.effect("a save that fails is logged, and one that never ends holds nothing up: the turns go on", () =>
    Effect.gen(function*() {
      const memory = yield* SessionStore.makeMemory
      const failing: SessionStore.Services = {
        ...memory,
        snapshots: {
          ...memory.snapshots,
          save: () => Effect.fail(new SessionStore.StoreError({ method: "saveSnapshot", description: "disk full" }))
        }
      }
      const { layer, logged } = warnings()
      const { blocked } = yield* runUntilBlocked(failing, 2, 1, false).pipe(Effect.provide(layer))
      assert.isTrue(logged.some((line) => line.includes("could not be saved")), logged.join("\n"))
      const hanging: SessionStore.Services = {
        ...memory,
        snapshots: {
          ...memory.snapshots,
          save: () => Effect.never
        }
      }
      const final = yield* answerInB(hanging, blocked, 1)
      assert.strictEqual(stateAs(final, "Completed").text, "You're in Lyon, after 2 greetings.")
      assert.deepStrictEqual(yield* memory.snapshots.load(blocked.sessionId), Option.none())
    }))
})
