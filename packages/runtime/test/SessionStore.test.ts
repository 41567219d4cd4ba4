import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import * as EventLogDriverSuite from "@parley/testing/EventLogDriverSuite"
import * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
import { DateTime, Effect, Fiber, Option, Stream } from "effect"

const treeId = Ids.SessionId.make("ses_store")
const childId = Ids.SessionId.make("ses_store_child")
const turnId = Ids.TurnId.make("turn_store")
const at = DateTime.makeUnsafe(0)
const queued = (seq: number, sessionId = treeId) =>
  new TurnEvent.TurnQueued({ sessionId, turnId, seq, at, input: `message ${seq}` })
const resolved = (seq: number, callbackId: string) =>
  new TurnEvent.CallbackResolved({
    sessionId: treeId,
    turnId,
    seq,
    at,
    callbackId: Ids.CallbackId.make(callbackId),
    resolution: "expired"
  })

/** Lets a forked reader subscribe before the test appends. */
const settled = Effect.repeat(Effect.yieldNow, { times: 20 })

const withTree = <A, E>(f: (store: SessionStore.Services) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.makeMemory
    yield* store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })
    return yield* f(store)
  })

describe("SessionStore.layerMemory", () => {
  it.effect("appends at the expected seq and reads from a cursor", () =>
    withTree((store) =>
      Effect.gen(function*() {
        yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
        const conflict = yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1)]))
        assert.deepStrictEqual(conflict._tag === "SeqConflict" ? [conflict.expected, conflict.actual] : [], [1, 2])
        const gap = yield* Effect.flip(store.eventLog.append(treeId, 2, [queued(2), queued(4)]))
        assert.strictEqual(gap._tag, "SeqConflict")
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 1)).map((e) => e.seq), [1])
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((e) => e.seq), [0, 1])
        assert.isTrue(Option.isSome(yield* store.eventLog.getTree(treeId)))
      })
    ))

  it.effect("finds the tree of every session that wrote to it", () =>
    withTree((store) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.none())
        yield* store.eventLog.append(treeId, 0, [queued(0), queued(1, childId)])
        assert.deepStrictEqual(yield* store.eventLog.treeOf(treeId), Option.some(treeId))
        assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.some(treeId))
      })
    ))

  it.effect("stores one resolution per callback, all or nothing", () =>
    withTree((store) =>
      Effect.gen(function*() {
        yield* store.eventLog.append(treeId, 0, [resolved(0, "cb_1")])
        const again = yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1), resolved(2, "cb_1")]))
        assert.strictEqual(again._tag, "ResolutionConflict")
        assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((e) => e.seq), [0])
      })
    ))

  it.effect("tail gives the stored events then the live ones, without gaps or repeats", () =>
    withTree((store) =>
      Effect.gen(function*() {
        yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
        const reader = yield* SessionStore.tail(store, treeId, 1).pipe(
          Stream.take(4),
          Stream.runCollect,
          Effect.forkChild
        )
        yield* settled
        yield* store.eventLog.append(treeId, 2, [queued(2)])
        yield* store.eventLog.append(treeId, 3, [queued(3), queued(4)])
        const seen = (yield* Fiber.join(reader)).map((e) => `${e._tag} ${e.seq}`)
        assert.deepStrictEqual(seen, ["TurnQueued 1", "TurnQueued 2", "TurnQueued 3", "TurnQueued 4"])
      })
    ))

  it.effect("changes tells which tree moved, and how far", () =>
    withTree((store) =>
      Effect.gen(function*() {
        const watcher = yield* SessionStore.changes(store).pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
        yield* settled
        yield* store.eventLog.append(treeId, 0, [queued(0)])
        yield* store.eventLog.append(treeId, 1, [queued(1), queued(2)])
        assert.deepStrictEqual(yield* Fiber.join(watcher), [
          { treeId, nextSeq: 1 },
          { treeId, nextSeq: 3 }
        ])
      })
    ))
})

// The memory driver on its own, below `EventLog.make`.
EventLogDriverSuite.suite(
  "SessionStore.makeMemoryDriver",
  Effect.map(SessionStore.makeMemoryDriver, (memory) => memory.driver)
)

// The whole store contract. The memory store lives in one process: every `open` is the same store.
SessionStoreSuite.suite(
  "SessionStore.layerMemory",
  Effect.map(SessionStore.makeMemory, (store) => ({ open: Effect.succeed(store) }))
)
