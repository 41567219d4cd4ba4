import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, ParleyError, TurnEvent } from "@parley/core"
import { SessionStore, StoreError } from "@parley/log"
import { DateTime, Effect, Schema } from "effect"

const members: ReadonlyArray<StoreError.StoreFailure> = [
  new StoreError.StoreError({ method: "read", description: "disk I/O error" }),
  new StoreError.StoreError({ module: "SqlStore", method: "layerSqlite", description: "unable to open" }),
  new StoreError.SeqConflict({ treeId: "ses_1", expected: 3, actual: 4 }),
  new StoreError.ResolutionConflict({ treeId: "ses_1", callbackId: "cb_1" }),
  new StoreError.LeaseLost({ treeId: "ses_1", owner: "engine-a", epoch: 2 })
]

describe("StoreError.isStoreError", () => {
  it.effect("is true for every member of the family", () =>
    Effect.sync(() => {
      for (const error of members) {
        assert.isTrue(StoreError.isStoreError(error), error._tag)
        assert.instanceOf(error, Error)
      }
    }))

  it.effect("is false for a ParleyError, a plain Error, an encoded member and non-objects", () =>
    Effect.gen(function*() {
      const encoded = yield* Schema.encodeEffect(StoreError.StoreFailure)(members[2]!)
      const others: ReadonlyArray<unknown> = [
        new ParleyError.SessionNotFound({ module: "Session", method: "get", sessionId: "ses_1" }),
        new Error("boom"),
        { _tag: "StoreError", method: "read", description: "x" },
        encoded,
        null,
        "SeqConflict"
      ]
      for (const other of others) assert.isFalse(StoreError.isStoreError(other), String(other))
    }))
})

describe("StoreError.StoreFailure", () => {
  it.effect("decodes every member back from its encoded form, as the same class", () =>
    Effect.gen(function*() {
      for (const error of members) {
        const encoded = yield* Schema.encodeEffect(StoreError.StoreFailure)(error)
        const decoded = yield* Schema.decodeUnknownEffect(StoreError.StoreFailure)(JSON.parse(JSON.stringify(encoded)))
        assert.strictEqual(decoded._tag, error._tag)
        assert.strictEqual(decoded.message, error.message)
        assert.isTrue(StoreError.isStoreError(decoded))
      }
    }))

  it.effect("rejects what is not one of its members", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(
        Schema.decodeUnknownEffect(StoreError.StoreFailure)({ _tag: "SessionNotFound", sessionId: "ses_1" })
      )
      assert.strictEqual(failure._tag, "SchemaError")
    }))

  it.effect("says where and why in its messages", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(members.map((error) => error.message), [
        "SessionStore.read: disk I/O error",
        "SqlStore.layerSqlite: unable to open",
        "append to tree ses_1 expected seq 3, the log is at 4",
        "callback cb_1 of tree ses_1 is already resolved",
        "engine-a no longer holds tree ses_1 (its lease at epoch 2 was taken over)"
      ])
    }))
})

describe("SessionStore's failures", () => {
  const treeId = Ids.SessionId.make("ses_store_error")
  const at = DateTime.makeUnsafe(0)
  const queued = (seq: number) =>
    new TurnEvent.TurnQueued({ sessionId: treeId, turnId: Ids.TurnId.make("turn_1"), seq, at, input: "hi" })

  it.effect("an append that lost a race fails with a member of the family, and writes nothing", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.makeMemory
      yield* store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })
      yield* store.eventLog.append(treeId, 0, [queued(0)])
      const error = yield* Effect.flip(store.eventLog.append(treeId, 0, [queued(0)]))
      assert.isTrue(StoreError.isStoreError(error))
      assert.instanceOf(error, StoreError.SeqConflict)
      assert.instanceOf(error, SessionStore.SeqConflict, "SessionStore re-exports the one definition")
      assert.strictEqual((yield* store.eventLog.read(treeId, 0)).length, 1)
    }))
})
