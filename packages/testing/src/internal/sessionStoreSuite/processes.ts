/**
 * Two stores over one database (as two processes would open it): each sees the other's trees and appends through
 * `getTree`, `treeOf`, `read`, `tail` and `changes`, and the log's rules hold across them (one winner per seq, one
 * resolution per callback).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Ids from "@parley/core/Ids"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import {
  callbackId,
  changesOf,
  childId,
  type MakeDatabase,
  opened,
  otherTreeId,
  queued,
  reader,
  resolved,
  seqs,
  settled,
  type Store,
  tail,
  tree,
  treeId,
  within
} from "./fixtures.js"

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

/** Waits until `store` has read the log of `id` up to `length` (another store's appends arrive through polls). */
const readUntil = (store: Store, id = treeId, length: number) =>
  within(Effect.gen(function*() {
    while (true) {
      const events = yield* store.eventLog.read(id, 0)
      if (events.length >= length) return events
      yield* Effect.sleep("5 millis")
    }
  }))

export const processes = (makeDatabase: MakeDatabase): void => {
  describe("a second store over the same database (another process)", () => {
    it.live("sees the first one's trees, sessions and events", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.append(treeId, 0, [queued(0), queued(1, childId), opened(2, callbackId("x"))])
          const header = yield* b.eventLog.getTree(treeId)
          assert.strictEqual(Option.map(header, (stored) => stored.agent.name).pipe(Option.getOrUndefined), "assistant")
          assert.deepStrictEqual(yield* b.eventLog.treeOf(childId), Option.some(treeId))
          assert.deepStrictEqual(seqs(yield* b.eventLog.read(treeId, 0)), [0, 1, 2])
          assert.deepStrictEqual(yield* b.eventLog.read(treeId, 0), yield* a.eventLog.read(treeId, 0))
        })))

    it.live("follows the first one's appends in its tails, gap-free", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.append(treeId, 0, [queued(0)])
          const tailed = yield* reader(tail(b, treeId, 0))
          assert.deepStrictEqual(seqs(yield* within(tailed.take(1))), [0])
          for (let seq = 1; seq < 30; seq += 3) {
            yield* a.eventLog.append(treeId, seq, [queued(seq), queued(seq + 1), queued(seq + 2)])
          }
          assert.deepStrictEqual(seqs(yield* within(tailed.take(30))), Array.from({ length: 30 }, (_, i) => i + 1))
        })))

    it.live("both write to one tree: each one's reads and new tails have the other's events", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.append(treeId, 0, [queued(0), queued(1)])
          yield* b.eventLog.append(treeId, 2, [queued(2, childId)])
          // `a` wrote last before `b`: what it remembers of the tree must not hide `b`'s append.
          assert.deepStrictEqual(seqs(yield* a.eventLog.read(treeId, 0)), [0, 1, 2])
          const fromA = yield* reader(tail(a, treeId, 1))
          assert.deepStrictEqual(seqs(yield* within(fromA.take(2))), [1, 2])
          yield* a.eventLog.append(treeId, 3, [queued(3)])
          yield* b.eventLog.append(treeId, 4, [queued(4)])
          assert.deepStrictEqual(seqs(yield* within(fromA.take(2))), [3, 4])
          const fromB = yield* reader(tail(b, treeId, 0))
          assert.deepStrictEqual(seqs(yield* within(fromB.take(5))), [0, 1, 2, 3, 4])
          assert.deepStrictEqual(yield* a.eventLog.treeOf(childId), Option.some(treeId))
        })))

    it.live("a session filed by one store keeps its tree in the other's appends", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.append(treeId, 0, [queued(0, childId)])
          yield* b.eventLog.createTree(tree(otherTreeId, "other"))
          yield* b.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId), queued(1, childId)])
          assert.deepStrictEqual(yield* b.eventLog.treeOf(childId), Option.some(treeId))
          assert.deepStrictEqual(yield* a.eventLog.treeOf(childId), Option.some(treeId))
          assert.deepStrictEqual(yield* a.eventLog.treeOf(otherTreeId), Option.some(otherTreeId))
        })))

    it.live("tells the first one's appends in its changes", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.createTree(tree(otherTreeId, "other"))
          const watcher = yield* reader(changesOf(b))
          yield* settled
          yield* a.eventLog.append(treeId, 0, [queued(0)])
          yield* a.eventLog.append(treeId, 1, [queued(1), queued(2)])
          yield* a.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId)])
          // A poll may fold several appends of one tree into one change: the last length is what counts.
          const last = new Map<string, number>()
          yield* within(Effect.gen(function*() {
            while (last.get(treeId) !== 3 || last.get(otherTreeId) !== 1) {
              for (const change of yield* watcher.take(1)) {
                assert.isTrue(change.nextSeq > (last.get(change.treeId) ?? 0), "a change moves its tree forward")
                last.set(change.treeId, change.nextSeq)
              }
            }
          }))
          assert.deepStrictEqual(Object.fromEntries(last), { [treeId]: 3, [otherTreeId]: 1 })
        })))

    it.live("races the first one: one append wins per seq, one resolution per callback", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.eventLog.append(treeId, 0, [opened(0, callbackId("race"))])
          const outcomes = yield* Effect.all(
            Array.from({ length: 10 }, (_, i) =>
              Effect.result(
                (i % 2 === 0 ? a : b).eventLog.append(treeId, 1, [
                  resolved(1, callbackId("race"), treeId),
                  queued(2, treeId, Ids.TurnId.make(`turn_racer_${i}`))
                ])
              )),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(outcomes.filter(Result.isSuccess).length, 1)
          for (const outcome of outcomes) {
            if (Result.isFailure(outcome)) assert.strictEqual(outcome.failure._tag, "SeqConflict")
          }
          // The loser reads the log and tries to resolve the same callback again: the store refuses.
          const log = yield* readUntil(b, treeId, 3)
          assert.deepStrictEqual(seqs(log), [0, 1, 2])
          const again = yield* Effect.flip(b.eventLog.append(treeId, 3, [resolved(3, callbackId("race"))]))
          assert.strictEqual(again._tag, "ResolutionConflict")
          const stale = yield* Effect.flip(a.eventLog.append(treeId, 2, [queued(2)]))
          assert.strictEqual(stale._tag, "SeqConflict")
          assert.deepStrictEqual(seqs(yield* a.eventLog.read(treeId, 0)), [0, 1, 2])
        })))

    it.live("shares leases and open callbacks with the first one", () =>
      twoStores(makeDatabase, (a, b) =>
        Effect.gen(function*() {
          yield* a.leases.heartbeat("engine-a", Duration.seconds(30))
          yield* b.leases.heartbeat("engine-b", Duration.seconds(30))
          const lease = yield* a.leases.claim(treeId, "engine-a")
          assert.isTrue(Option.isSome(lease))
          assert.isTrue(
            Option.isNone(yield* b.leases.claim(treeId, "engine-b")),
            "a live owner in another process keeps it"
          )
          yield* a.eventLog.append(treeId, 0, [queued(0), opened(1, callbackId("far"))], Option.getOrUndefined(lease))
          const open = yield* b.eventLog.listOpen()
          assert.deepStrictEqual(open.map((row) => [row.treeId, row.callbackId]), [[treeId, callbackId("far")]])
          assert.deepStrictEqual((yield* b.leases.unfinished("engine-b")).map((tree) => tree.treeId), [])
          // The owner retires (a clean shutdown): the other process takes the tree at once; the old lease is fenced.
          yield* a.leases.retire("engine-a")
          assert.deepStrictEqual(yield* b.leases.unfinished("engine-b"), [{ treeId, owner: "engine-a" }])
          const taken = yield* b.leases.claim(treeId, "engine-b")
          assert.deepStrictEqual(Option.map(taken, (held) => held.epoch), Option.some(2))
          const late = yield* Effect.flip(a.eventLog.append(treeId, 2, [queued(2)], Option.getOrUndefined(lease)))
          assert.strictEqual(late._tag, "LeaseLost")
          yield* b.eventLog.append(treeId, 2, [resolved(2, callbackId("far"))], Option.getOrUndefined(taken))
          assert.deepStrictEqual(yield* a.eventLog.listOpen(), [])
        })))
  })
}
