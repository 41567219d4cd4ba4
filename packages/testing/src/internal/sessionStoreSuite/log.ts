/**
 * The log: tree headers, the session index, appends all or none at the expected seq, one resolution per callback,
 * racing and concurrent appends (group commit: a conflict fails only its own append), every kind of event read back
 * as written, and rows that do not decode.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AgentSpec from "@parley/core/AgentSpec"
import * as Ids from "@parley/core/Ids"
import type * as TurnEvent from "@parley/core/TurnEvent"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import {
  appendUntil,
  at,
  callbackId,
  childId,
  everyKind,
  grandchildId,
  type MakeDatabase,
  opened,
  otherTreeId,
  queued,
  resolved,
  seqs,
  type Store,
  tail,
  tree,
  treeId,
  withStore
} from "./fixtures.js"

const expectSeqConflict = (error: { readonly _tag: string }, expected: number, actual: number) => {
  assert.strictEqual(error._tag, "SeqConflict")
  if (error._tag === "SeqConflict") {
    const conflict = error as unknown as { readonly expected: number; readonly actual: number; readonly treeId: string }
    assert.deepStrictEqual([conflict.expected, conflict.actual], [expected, actual])
  }
}

const storedSeqs = (store: Store, id = treeId) => Effect.map(store.eventLog.read(id, 0), seqs)

export const log = (makeDatabase: MakeDatabase, options: { readonly canCorrupt: boolean }): void => {
  describe("trees and sessions", () => {
    it.effect("createTree stores the header; getTree reads it back; a second createTree keeps the first", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const stored = yield* store.eventLog.getTree(treeId)
          assert.isTrue(Option.isSome(stored))
          if (Option.isNone(stored)) return
          assert.strictEqual(stored.value.treeId, treeId)
          assert.deepStrictEqual(stored.value.agent, tree().agent)
          assert.strictEqual(DateTime.toEpochMillis(stored.value.createdAt), DateTime.toEpochMillis(at))
          yield* store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "impostor" }), createdAt: at })
          const again = yield* store.eventLog.getTree(treeId)
          assert.strictEqual(Option.map(again, (header) => header.agent.name).pipe(Option.getOrUndefined), "assistant")
          assert.deepStrictEqual(yield* store.eventLog.getTree(otherTreeId), Option.none())
          assert.deepStrictEqual(yield* store.eventLog.read(otherTreeId, 0), [])
        })))

    it.effect("treeOf finds the tree of its root and of every session seen in its events, first tree first", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* store.eventLog.treeOf(treeId), Option.some(treeId))
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.none())
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1, childId), queued(2, grandchildId)])
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.some(treeId))
          assert.deepStrictEqual(yield* store.eventLog.treeOf(grandchildId), Option.some(treeId))
          // A session already filed keeps its tree.
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          yield* store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId), queued(1, childId)])
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.some(treeId))
          assert.deepStrictEqual(yield* store.eventLog.treeOf(otherTreeId), Option.some(otherTreeId))
          assert.deepStrictEqual(yield* store.eventLog.treeOf(Ids.SessionId.make("ses_nobody")), Option.none())
        })))
  })

  describe("appends", () => {
    it.effect("appends at the expected seq and reads from a cursor", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
          yield* store.eventLog.append(treeId, 2, [queued(2)])
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1, 2])
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 1)), [1, 2])
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 3)), [])
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 10)), [])
        })))

    it.effect("a stale or gapped append is a SeqConflict with the log's length, and stores nothing", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
          expectSeqConflict(yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1)])), 1, 2)
          expectSeqConflict(yield* Effect.flip(store.eventLog.append(treeId, 3, [queued(3)])), 3, 2)
          // The events' seqs must follow the expected one, without gaps.
          expectSeqConflict(yield* Effect.flip(store.eventLog.append(treeId, 2, [queued(2), queued(4)])), 2, 2)
          expectSeqConflict(yield* Effect.flip(store.eventLog.append(treeId, 2, [queued(3)])), 2, 2)
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1])
          // A child session named only by a refused append is not filed.
          expectSeqConflict(yield* Effect.flip(store.eventLog.append(treeId, 0, [queued(0, childId)])), 0, 2)
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.none())
          yield* store.eventLog.append(treeId, 2, [queued(2)])
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1, 2])
        })))

    it.effect("an empty append changes nothing", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [])
          yield* store.eventLog.append(treeId, 0, [queued(0)])
          yield* store.eventLog.append(treeId, 1, [])
          assert.deepStrictEqual(yield* storedSeqs(store), [0])
        })))

    it.effect("an append to a tree that was never created stores nothing", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const outcome = yield* Effect.result(
            store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId), queued(1, childId)])
          )
          // The memory store ignores it; a SQL store refuses it with a StoreError. Either way, nothing is stored.
          if (Result.isFailure(outcome)) assert.strictEqual(outcome.failure._tag, "StoreError")
          assert.deepStrictEqual(yield* store.eventLog.read(otherTreeId, 0), [])
          assert.deepStrictEqual(yield* store.eventLog.getTree(otherTreeId), Option.none())
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.none())
        })))

    it.effect("every kind of event reads back as it was written (read and tail)", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const events = everyKind(0)
          yield* store.eventLog.append(treeId, 0, events.slice(0, 5))
          yield* store.eventLog.append(treeId, 5, events.slice(5))
          const read = yield* store.eventLog.read(treeId, 0)
          assert.strictEqual(read.length, events.length)
          events.forEach((event, i) => assert.deepStrictEqual(read[i], event, event._tag))
          const tailed = yield* tail(store, treeId, 0).pipe(Stream.take(events.length), Stream.runCollect)
          assert.deepStrictEqual([...tailed], [...events])
        })))

    it.effect("racing appends at one seq: exactly one wins, the others are SeqConflicts", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [queued(0)])
          const outcomes = yield* Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i),
            (i) =>
              Effect.result(store.eventLog.append(treeId, 1, [queued(1, childId, Ids.TurnId.make(`turn_race_${i}`))])),
            { concurrency: "unbounded" }
          )
          const won = outcomes.filter(Result.isSuccess)
          assert.strictEqual(won.length, 1)
          for (const outcome of outcomes) {
            if (Result.isFailure(outcome)) expectSeqConflict(outcome.failure, 1, 2)
          }
          const stored = yield* store.eventLog.read(treeId, 0)
          assert.deepStrictEqual(seqs(stored), [0, 1])
        })))

    it.effect("concurrent appends to many trees: each succeeds or fails alone", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const ids = Array.from({ length: 60 }, (_, i) => Ids.SessionId.make(`ses_many_${i}`))
          yield* Effect.forEach(ids, (id) => store.eventLog.createTree(tree(id)), { concurrency: "unbounded" })
          yield* Effect.forEach(ids, (id) => store.eventLog.append(id, 0, [resolved(0, callbackId(`${id}_0`), id)]), {
            concurrency: "unbounded"
          })
          // Tree i: a good append (i % 3 == 0), a stale one (i % 3 == 1), or one resolving its callback again.
          const outcomes = yield* Effect.forEach(
            ids,
            (id, i) => {
              const events: ReadonlyArray<TurnEvent.TurnEvent> = i % 3 === 2
                ? [queued(1, id), resolved(2, callbackId(`${id}_0`), id)]
                : [queued(1, id), opened(2, callbackId(`${id}_1`), id)]
              return Effect.result(store.eventLog.append(id, i % 3 === 1 ? 0 : 1, events))
            },
            { concurrency: "unbounded" }
          )
          for (let i = 0; i < ids.length; i++) {
            const outcome = outcomes[i]
            const expected = i % 3 === 0 ? "ok" : i % 3 === 1 ? "SeqConflict" : "ResolutionConflict"
            assert.strictEqual(Result.isSuccess(outcome) ? "ok" : outcome.failure._tag, expected, ids[i])
            assert.deepStrictEqual(yield* storedSeqs(store, ids[i]), i % 3 === 0 ? [0, 1, 2] : [0], ids[i])
          }
        })))
  })

  describe("one resolution per callback", () => {
    it.effect("a second CallbackResolved fails its whole append, later or within the same append", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.append(treeId, 0, [opened(0, callbackId("1")), resolved(1, callbackId("1"))])
          const again = yield* Effect.flip(
            store.eventLog.append(treeId, 2, [queued(2, childId), resolved(3, callbackId("1"))])
          )
          assert.strictEqual(again._tag, "ResolutionConflict")
          if (again._tag === "ResolutionConflict") {
            assert.deepStrictEqual([again.treeId, again.callbackId], [treeId, callbackId("1")])
          }
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1])
          assert.deepStrictEqual(yield* store.eventLog.treeOf(childId), Option.none())
          const twice = yield* Effect.flip(
            store.eventLog.append(treeId, 2, [resolved(2, callbackId("2")), resolved(3, callbackId("2"))])
          )
          assert.strictEqual(twice._tag, "ResolutionConflict")
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1])
          // The refused resolution of cb_2 left nothing behind: it can still be resolved once.
          yield* store.eventLog.append(treeId, 2, [resolved(2, callbackId("2")), resolved(3, callbackId("3"))])
          assert.deepStrictEqual(yield* storedSeqs(store), [0, 1, 2, 3])
        })))

    it.effect("a callback resolved in one tree cannot be resolved again from another tree", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          yield* store.eventLog.append(treeId, 0, [resolved(0, callbackId("shared"))])
          const again = yield* Effect.flip(
            store.eventLog.append(otherTreeId, 0, [resolved(0, callbackId("shared"), otherTreeId)])
          )
          assert.strictEqual(again._tag, "ResolutionConflict")
          assert.deepStrictEqual(yield* store.eventLog.read(otherTreeId, 0), [])
        })))
  })

  if (options.canCorrupt) {
    describe("rows that do not decode", () => {
      it.effect("are a StoreError from read and from tail, never a defect", () =>
        withStore(makeDatabase, (store, database) =>
          Effect.gen(function*() {
            yield* appendUntil(store, treeId, 3, (seq) => queued(seq))
            yield* database.corrupt!(treeId, 1)
            const fromRead = yield* Effect.flip(store.eventLog.read(treeId, 0))
            assert.strictEqual(fromRead._tag, "StoreError")
            // A store that reads the rows (this one may serve its own recent appends from memory): another process.
            const other = yield* database.open
            const fromTail = yield* Effect.flip(Stream.runCollect(tail(other, treeId, 0)))
            assert.strictEqual(fromTail._tag, "StoreError")
            assert.strictEqual((yield* Effect.flip(other.eventLog.read(treeId, 1)))._tag, "StoreError")
            // The rows around it still read.
            assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 2)), [2])
          })))
    })
  }
}
