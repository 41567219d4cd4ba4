import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import { Chunk, DateTime, Effect, Fiber, Option, Stream } from "effect"

const sessionId = Ids.SessionId.make("ses_store")
const turnId = Ids.TurnId.make("turn_store")
const at = DateTime.unsafeMake(0)
const started = (seq: number) => new TurnEvent.TurnStarted({ sessionId, turnId, seq, at, input: `message ${seq}` })
const resolved = (seq: number, callbackId: string) =>
  new TurnEvent.CallbackResolved({
    sessionId,
    turnId,
    seq,
    at,
    callbackId: Ids.CallbackId.make(callbackId),
    resolution: "expired"
  })

const withSession = <A, E>(f: (store: SessionStore.Service) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.makeMemory
    yield* store.createSession({ sessionId, agent: AgentSpec.make({ name: "a" }), parent: undefined, createdAt: at })
    return yield* f(store)
  })

describe("SessionStore.layerMemory", () => {
  it.effect("appends with the expected seq and reads from a cursor", () =>
    withSession((store) =>
      Effect.gen(function*() {
        yield* store.append(sessionId, [started(0), started(1)])
        const conflict = yield* Effect.flip(store.append(sessionId, [started(1)]))
        assert.deepStrictEqual(conflict._tag === "SeqConflict" ? [conflict.expected, conflict.actual] : [], [1, 2])
        const gap = yield* Effect.flip(store.append(sessionId, [started(2), started(4)]))
        assert.strictEqual(gap._tag, "SeqConflict")
        assert.deepStrictEqual((yield* store.read(sessionId, 1)).map((e) => e.seq), [1])
        assert.deepStrictEqual((yield* store.read(sessionId, 0)).map((e) => e.seq), [0, 1])
        assert.isTrue(Option.isSome(yield* store.getSession(sessionId)))
      })
    ))

  it.effect("stores one resolution per callback, all or nothing", () =>
    withSession((store) =>
      Effect.gen(function*() {
        yield* store.append(sessionId, [resolved(0, "cb_1")])
        const again = yield* Effect.flip(store.append(sessionId, [started(1), resolved(2, "cb_1")]))
        assert.strictEqual(again._tag, "ResolutionConflict")
        assert.deepStrictEqual((yield* store.read(sessionId, 0)).map((e) => e.seq), [0])
      })
    ))

  it.effect("tail gives the stored events then the live ones, without gaps or repeats", () =>
    withSession((store) =>
      Effect.gen(function*() {
        yield* store.append(sessionId, [started(0), started(1)])
        const reader = yield* store.tail(sessionId, 1).pipe(Stream.take(3), Stream.runCollect, Effect.fork)
        yield* Effect.yieldNow()
        yield* store.append(sessionId, [started(2)])
        yield* store.append(sessionId, [started(3)])
        const seen = Chunk.toReadonlyArray(yield* Fiber.join(reader)).map((e) => e.seq)
        assert.deepStrictEqual(seen, [1, 2, 3])
      })
    ))
})
