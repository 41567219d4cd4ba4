/**
 * The live side: `tail` gives the stored events then the appended ones, gap-free and without repeats, also under
 * concurrent appends; `changes` tells every append of the tree and how far the log reached. (Live-only deltas do not
 * go through the log: the engine's own channel merges them into its readers' view.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Ids from "@parley/core/Ids"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import {
  appendUntil,
  callbackId,
  changesOf,
  childId,
  type MakeDatabase,
  otherTreeId,
  queued,
  reader,
  resolved,
  seqs,
  settled,
  tags,
  tail,
  tree,
  treeId,
  withStore
} from "./fixtures.js"

export const live = (makeDatabase: MakeDatabase): void => {
  describe("tail", () => {
    it.effect("gives the stored events then the live ones, without gaps or repeats; it stores nothing itself", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
          const tailed = yield* reader(tail(store, treeId, 1))
          // The stored event arrives first: from then on the reader follows the live ones.
          assert.deepStrictEqual(tags(yield* tailed.take(1)), ["TurnQueued 1"])
          yield* store.eventLog.append(treeId, 2, [queued(2)])
          yield* store.eventLog.append(treeId, 3, [queued(3), queued(4)])
          assert.deepStrictEqual(tags(yield* tailed.take(3)), ["TurnQueued 2", "TurnQueued 3", "TurnQueued 4"])
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 0)), [0, 1, 2, 3, 4])
          // A tail that starts later from an earlier cursor gets the same stored events.
          const after = yield* tail(store, treeId, 2).pipe(Stream.take(3), Stream.runCollect)
          assert.deepStrictEqual(tags(after), ["TurnQueued 2", "TurnQueued 3", "TurnQueued 4"])
        })))

    it.effect("is gap-free while several writers race to append", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0)])
          const early = yield* reader(tail(store, treeId, 0))
          assert.deepStrictEqual(seqs(yield* early.take(1)), [0])
          const total = 120
          const writers = yield* Effect.forEach(
            [0, 1, 2, 3],
            (writer) =>
              Effect.forkChild(
                appendUntil(
                  store,
                  treeId,
                  total,
                  (seq) => queued(seq, treeId, Ids.TurnId.make(`turn_writer_${writer}`))
                )
              )
            // Forked from this fiber (its children live as long as it does), all before any runs.
          )
          // A reader that joins halfway is gap-free too.
          const halfway = yield* reader(tail(store, treeId, 30))
          yield* Fiber.joinAll(writers)
          const seen = [0, ...seqs(yield* early.take(total - 1))]
          assert.deepStrictEqual(seen, Array.from({ length: total }, (_, i) => i))
          assert.deepStrictEqual(
            seqs(yield* halfway.take(total - 30)),
            Array.from({ length: total - 30 }, (_, i) => i + 30)
          )
          yield* settled
          assert.deepStrictEqual(yield* early.pending, [])
          assert.deepStrictEqual(yield* halfway.pending, [])
        })))

    it.effect("of a tree that does not exist ends at once", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const events = yield* Stream.runCollect(tail(store, otherTreeId, 0))
          assert.strictEqual(events.length, 0)
        })))

    it.effect("from beyond the log's end waits for that seq", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0)])
          const ahead = yield* reader(tail(store, treeId, 3))
          yield* settled
          yield* appendUntil(store, treeId, 6, (seq) => queued(seq))
          assert.deepStrictEqual(seqs(yield* ahead.take(3)), [3, 4, 5])
          yield* settled
          assert.deepStrictEqual(yield* ahead.pending, [])
        })))
  })

  describe("changes", () => {
    it.effect("tells every append of the tree and how far the log reached, not refused or empty ones", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          const watcher = yield* reader(changesOf(store))
          yield* settled
          yield* store.eventLog.append(treeId, 0, [queued(0)])
          yield* store.eventLog.append(treeId, 1, [queued(1), queued(2, childId), resolved(3, callbackId("c"))])
          yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1)]))
          yield* Effect.flip(store.eventLog.append(treeId, 4, [resolved(4, callbackId("c"))]))
          yield* store.eventLog.append(treeId, 4, [])
          yield* store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId)])
          assert.deepStrictEqual(yield* watcher.take(3), [
            { treeId, nextSeq: 1 },
            { treeId, nextSeq: 4 },
            { treeId: otherTreeId, nextSeq: 1 }
          ])
          yield* settled
          assert.deepStrictEqual(yield* watcher.pending, [])
        })))
  })
}
