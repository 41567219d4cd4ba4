/**
 * Snapshots of a tree's projection: `saveSnapshot` keeps the latest per tree (never an older one, one at the same
 * `seq` replaces it), `loadSnapshot` returns it as saved, a tree without one (or a missing tree) has none, and two
 * stores over one database share them. The store never reads the state: it is text.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as SessionStore from "@parley/log/SessionStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { type MakeDatabase, otherTreeId, queued, type Store, tree, treeId, within } from "./fixtures.js"

const snapshot = (seq: number, version = 1, text = `state at ${seq}`): SessionStore.Snapshot => ({
  seq,
  version,
  state: JSON.stringify({ nextSeq: seq, text })
})

const twoStores = <A, E>(
  makeDatabase: MakeDatabase,
  body: (a: Store, b: Store) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.gen(function*() {
    const database = yield* makeDatabase
    const a = yield* database.open
    const b = yield* database.open
    yield* a.eventLog.createTree(tree())
    return yield* body(a, b)
  })

const withStore = <A, E>(makeDatabase: MakeDatabase, body: (store: Store) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.gen(function*() {
    const database = yield* makeDatabase
    const store = yield* database.open
    yield* store.eventLog.createTree(tree())
    return yield* body(store)
  })

export const snapshots = (makeDatabase: MakeDatabase): void => {
  describe("snapshots", () => {
    it.effect("a tree has none until one is saved; a missing tree has none", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.none())
          assert.deepStrictEqual(yield* store.snapshots.load(otherTreeId), Option.none())
        })))

    it.effect("loads the snapshot as saved, then the latest one", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1), queued(2), queued(3)])
          yield* store.snapshots.save(treeId, snapshot(2))
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.some(snapshot(2)))
          yield* store.snapshots.save(treeId, snapshot(4, 2))
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.some(snapshot(4, 2)))
          // The log is untouched by snapshots.
          assert.strictEqual((yield* store.eventLog.read(treeId, 0)).length, 4)
        })))

    it.effect("never moves backwards: an older snapshot keeps the stored one; one at the same seq replaces it", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.snapshots.save(treeId, snapshot(500))
          yield* store.snapshots.save(treeId, snapshot(499, 1, "older"))
          yield* store.snapshots.save(treeId, snapshot(0, 1, "oldest"))
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.some(snapshot(500)))
          // A newer layout of the same state (another version) replaces it.
          yield* store.snapshots.save(treeId, snapshot(500, 2, "relaid"))
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.some(snapshot(500, 2, "relaid")))
        })))

    it.effect("keeps one per tree; a snapshot of a tree the store does not have is not kept", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.snapshots.save(otherTreeId, snapshot(7))
          assert.deepStrictEqual(yield* store.snapshots.load(otherTreeId), Option.none())
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          yield* store.snapshots.save(otherTreeId, snapshot(7))
          yield* store.snapshots.save(treeId, snapshot(3))
          assert.deepStrictEqual(yield* store.snapshots.load(otherTreeId), Option.some(snapshot(7)))
          assert.deepStrictEqual(yield* store.snapshots.load(treeId), Option.some(snapshot(3)))
        })))

    it.effect("a large state with any characters comes back exactly", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const text = Array.from({ length: 20_000 }, (_, i) => `ünïcödé ✓ 'quote' "double" \\ ${i}\n`).join("")
          const large = snapshot(1, 1, text)
          assert.isAbove(large.state.length, 500_000)
          yield* store.snapshots.save(treeId, large)
          const loaded = yield* store.snapshots.load(treeId)
          assert.isTrue(Option.isSome(loaded))
          if (Option.isSome(loaded)) assert.strictEqual(loaded.value.state, large.state)
        })))

    it.live("two stores over one database share snapshots; neither moves the other's backwards", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.snapshots.save(treeId, snapshot(10))
          assert.deepStrictEqual(yield* within(b.snapshots.load(treeId)), Option.some(snapshot(10)))
          yield* b.snapshots.save(treeId, snapshot(5, 1, "behind"))
          assert.deepStrictEqual(yield* a.snapshots.load(treeId), Option.some(snapshot(10)))
          yield* Effect.all([a.snapshots.save(treeId, snapshot(30)), b.snapshots.save(treeId, snapshot(20))], {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(yield* a.snapshots.load(treeId), Option.some(snapshot(30)))
          assert.deepStrictEqual(yield* b.snapshots.load(treeId), Option.some(snapshot(30)))
        })))
  })
}
