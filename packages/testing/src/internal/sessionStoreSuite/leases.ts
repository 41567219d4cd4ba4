/**
 * Leases and what recovery and other processes read: `claim` (one live owner per tree, the epoch raised by every
 * claim), appends fenced by a lease (`LeaseLost`, nothing written), `heartbeat` / `retire`, `unfinished`
 * (trees with turns not ended that an owner may take up) and `listOpen` (callbacks open across trees).
 */
import { assert, describe, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as TestClock from "effect/testing/TestClock"
import {
  blocked,
  callbackId,
  childId,
  ended,
  later,
  type MakeDatabase,
  opened,
  otherTreeId,
  queued,
  resolved,
  seqs,
  type Store,
  tree,
  treeId,
  withStore
} from "./fixtures.js"

const ttl = Duration.seconds(10)

const epochOf = (lease: Option.Option<{ readonly owner: string; readonly epoch: number }>) =>
  Option.getOrUndefined(Option.map(lease, (held) => `${held.owner}@${held.epoch}`))

const unfinishedOf = (store: Store, owner: string) =>
  Effect.map(
    store.leases.unfinished(owner),
    (trees) => trees.map((tree) => `${tree.treeId}:${tree.owner ?? "-"}`).sort()
  )

export const leases = (makeDatabase: MakeDatabase): void => {
  describe("leases", () => {
    it.effect("the first claim takes a tree (epoch 1); its owner claims it again (epoch 2); a live owner keeps it", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.leases.heartbeat("engine-a", ttl)
          yield* store.leases.heartbeat("engine-b", ttl)
          const first = yield* store.leases.claim(treeId, "engine-a")
          assert.strictEqual(epochOf(first), "engine-a@1")
          // A claim is a new tenure, even the same owner's (a process restarted under its name): the one before it is
          // fenced off.
          const again = yield* store.leases.claim(treeId, "engine-a")
          assert.strictEqual(epochOf(again), "engine-a@2")
          const late = yield* Effect.flip(store.eventLog.append(treeId, 0, [queued(0)], Option.getOrUndefined(first)))
          assert.strictEqual(late._tag, "LeaseLost")
          yield* store.eventLog.append(treeId, 0, [queued(0)], Option.getOrUndefined(again))
          assert.isTrue(Option.isNone(yield* store.leases.claim(treeId, "engine-b")))
          assert.isTrue(Option.isNone(yield* store.leases.claim(otherTreeId, "engine-a")), "no such tree")
        })))

    it.effect("a lapsed owner's tree is taken over, with a higher epoch; a retired owner's at once", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.leases.heartbeat("engine-a", ttl)
          yield* store.leases.claim(treeId, "engine-a")
          yield* store.leases.heartbeat("engine-b", Duration.minutes(5))
          yield* TestClock.adjust("11 seconds")
          assert.strictEqual(epochOf(yield* store.leases.claim(treeId, "engine-b")), "engine-b@2")
          // b is alive: a cannot take it back, even though a beats again.
          yield* store.leases.heartbeat("engine-a", ttl)
          assert.isTrue(Option.isNone(yield* store.leases.claim(treeId, "engine-a")))
          yield* store.leases.retire("engine-b")
          assert.strictEqual(epochOf(yield* store.leases.claim(treeId, "engine-a")), "engine-a@3")
        })))

    it.effect("an owner that never beat holds nothing against another claim", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          assert.strictEqual(epochOf(yield* store.leases.claim(treeId, "engine-a")), "engine-a@1")
          assert.strictEqual(epochOf(yield* store.leases.claim(treeId, "engine-b")), "engine-b@2")
        })))

    it.effect("an append under a lease taken over fails with LeaseLost and writes nothing; the new owner appends", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.leases.heartbeat("engine-a", ttl)
          const a = Option.getOrThrow(yield* store.leases.claim(treeId, "engine-a"))
          yield* store.eventLog.append(treeId, 0, [queued(0)], a)
          yield* TestClock.adjust("11 seconds")
          yield* store.leases.heartbeat("engine-b", ttl)
          const b = Option.getOrThrow(yield* store.leases.claim(treeId, "engine-b"))
          const late = yield* Effect.result(store.eventLog.append(treeId, 1, [queued(1)], a))
          assert.isTrue(Result.isFailure(late))
          if (Result.isFailure(late)) {
            assert.strictEqual(late.failure._tag, "LeaseLost")
            if (late.failure._tag === "LeaseLost") {
              assert.deepStrictEqual([late.failure.owner, late.failure.epoch], ["engine-a", 1])
            }
          }
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 0)), [0])
          // A lease's check comes with the seq's: the new owner at a stale seq gets SeqConflict, at the right one wins.
          const stale = yield* Effect.result(store.eventLog.append(treeId, 0, [queued(0)], b))
          assert.strictEqual(Result.isFailure(stale) ? stale.failure._tag : "appended", "SeqConflict")
          yield* store.eventLog.append(treeId, 1, [queued(1)], b)
          // Appends without a lease (answers from any process) are checked by seq only.
          yield* store.eventLog.append(treeId, 2, [opened(2, callbackId("open"))])
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 0)), [0, 1, 2])
        })))
    it.effect("an unconditional claim takes a tree from a live owner, raising the epoch; the deposed owner's append fails", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.leases.heartbeat("engine-a", ttl)
          const a = Option.getOrThrow(yield* store.leases.claim(treeId, "engine-a"))
          yield* store.eventLog.append(treeId, 0, [queued(0)], a)
          // engine-a is alive: a plain claim by another fails, an unconditional one (a cluster placed it) takes it.
          assert.isTrue(Option.isNone(yield* store.leases.claim(treeId, "runner-b")))
          const b = yield* store.leases.claim(treeId, "runner-b", { unconditional: true })
          assert.strictEqual(epochOf(b), "runner-b@2")
          const late = yield* Effect.flip(store.eventLog.append(treeId, 1, [queued(1)], a))
          assert.strictEqual(late._tag, "LeaseLost")
          assert.deepStrictEqual(seqs(yield* store.eventLog.read(treeId, 0)), [0])
          yield* store.eventLog.append(treeId, 1, [queued(1)], Option.getOrUndefined(b))
          // Taken back the same way (placed again on its first runner), and again by the same owner: a new epoch each.
          assert.strictEqual(
            epochOf(yield* store.leases.claim(treeId, "engine-a", { unconditional: true })),
            "engine-a@3"
          )
          assert.strictEqual(
            epochOf(yield* store.leases.claim(treeId, "engine-a", { unconditional: true })),
            "engine-a@4"
          )
          assert.isTrue(
            Option.isNone(yield* store.leases.claim(otherTreeId, "engine-a", { unconditional: true })),
            "no such tree"
          )
        })))
  })

  describe("unfinished trees", () => {
    it.effect("lists trees with turns not ended that the owner may claim", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [], "trees without turns are not unfinished")
          yield* store.eventLog.append(treeId, 0, [queued(0), queued(1, childId, "turn_child" as never)])
          yield* store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId)])
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [`${otherTreeId}:-`, `${treeId}:-`].sort())
          // The root's turn ends; its subagent's does not: still unfinished. Then the subagent's ends too.
          yield* store.eventLog.append(treeId, 2, [ended(2)])
          assert.include(yield* unfinishedOf(store, "engine-a"), `${treeId}:-`)
          yield* store.eventLog.append(treeId, 3, [ended(3, childId, "turn_child" as never)])
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [`${otherTreeId}:-`])
          // A live owner's tree is listed for it, not for others; once it lapses, for others with its owner.
          yield* store.leases.heartbeat("engine-b", ttl)
          yield* store.leases.claim(otherTreeId, "engine-b")
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [])
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-b"), [`${otherTreeId}:engine-b`])
          yield* TestClock.adjust("11 seconds")
          assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [`${otherTreeId}:engine-b`])
        })))
  })

  describe("paused trees", () => {
    const pausedOf = (store: Store, owner: string, own: boolean) =>
      Effect.map(store.leases.claimPaused(owner, own), ({ deadlines, trees }) => ({
        trees: trees.map((tree) => `${tree.treeId}:${tree.lease.owner}@${tree.lease.epoch}`).sort(),
        deadlines: deadlines.map((deadline) => `${deadline.callbackId}@${deadline.expiresAt}`).sort()
      }))

    it.effect(
      "a tree whose last append ended TurnBlocked is paused: claimPaused claims it in one go with its open " +
        "callbacks' deadlines, and unfinished leaves it out until it moves again",
      () =>
        withStore(makeDatabase, (store) =>
          Effect.gen(function*() {
            yield* store.eventLog.createTree(tree(otherTreeId, "other"))
            const [x, y] = [callbackId("x"), callbackId("y")]
            yield* store.eventLog.append(treeId, 0, [queued(0), opened(1, x), opened(2, y)])
            yield* store.eventLog.append(treeId, 3, [resolved(3, y), blocked(4, x)])
            yield* store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId)])
            // The paused tree is claimPaused's, the other unfinished's.
            assert.deepStrictEqual(yield* unfinishedOf(store, "engine-a"), [`${otherTreeId}:-`])
            const expiresAt = DateTime.toEpochMillis(later)
            assert.deepStrictEqual(yield* pausedOf(store, "engine-a", true), {
              trees: [`${treeId}:engine-a@1`],
              deadlines: [`${x}@${expiresAt}`]
            })
            // Claimed by a live owner: nobody else takes it, nor does the owner's own scan (not `own`) again.
            yield* store.leases.heartbeat("engine-a", ttl)
            assert.deepStrictEqual(yield* pausedOf(store, "engine-b", true), { trees: [], deadlines: [] })
            assert.deepStrictEqual(yield* pausedOf(store, "engine-a", false), { trees: [], deadlines: [] })
            // Its owner restarted under its name takes it again (a new epoch); once the owner lapses, anyone may.
            assert.deepStrictEqual((yield* pausedOf(store, "engine-a", true)).trees, [`${treeId}:engine-a@2`])
            yield* TestClock.adjust("11 seconds")
            assert.deepStrictEqual((yield* pausedOf(store, "engine-b", false)).trees, [`${treeId}:engine-b@3`])
            // An answer moves it: no longer paused, it is unfinished again.
            yield* store.eventLog.append(treeId, 5, [resolved(5, x)])
            yield* TestClock.adjust("11 seconds")
            assert.deepStrictEqual((yield* pausedOf(store, "engine-a", true)).trees, [])
            assert.deepStrictEqual(
              yield* unfinishedOf(store, "engine-a"),
              [`${otherTreeId}:-`, `${treeId}:engine-b`].sort()
            )
          }))
    )
  })

  describe("open callbacks across trees", () => {
    it.effect("lists callbacks opened and not resolved, by session and by kind", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          yield* store.eventLog.createTree(tree(otherTreeId, "other"))
          yield* store.eventLog.append(treeId, 0, [
            queued(0),
            opened(1, callbackId("x")),
            opened(2, callbackId("y")),
            opened(3, callbackId("z"), childId)
          ])
          yield* store.eventLog.append(otherTreeId, 0, [opened(0, callbackId("w"), otherTreeId)])
          yield* store.eventLog.append(treeId, 4, [resolved(4, callbackId("x"))])
          const all = yield* store.eventLog.listOpen()
          assert.deepStrictEqual(all.map((row) => row.callbackId).sort(), ["cb_w", "cb_y", "cb_z"])
          const y = all.find((row) => row.callbackId === callbackId("y"))
          assert.deepStrictEqual(y, {
            treeId,
            sessionId: treeId,
            turnId: y?.turnId as never,
            callbackId: callbackId("y"),
            kind: "approval",
            seq: 2
          })
          // In the order they opened within a tree.
          assert.deepStrictEqual(
            all.filter((row) => row.treeId === treeId).map((row) => row.seq),
            [2, 3]
          )
          const ofChild = yield* store.eventLog.listOpen({ sessionId: childId })
          assert.deepStrictEqual(ofChild.map((row) => [row.callbackId, row.treeId]), [["cb_z", treeId]])
          assert.strictEqual((yield* store.eventLog.listOpen({ kind: "approval" })).length, 3)
          assert.deepStrictEqual(yield* store.eventLog.listOpen({ kind: "client_tool" }), [])
          assert.deepStrictEqual(
            yield* store.eventLog.listOpen({ sessionId: otherTreeId, kind: "approval" }).pipe(
              Effect.map((rows) => rows.map((row) => row.callbackId))
            ),
            ["cb_w"]
          )
        })))

    it.effect("lists the callbacks due by a time: open, with a deadline at or before it", () =>
      withStore(makeDatabase, (store) =>
        Effect.gen(function*() {
          const sooner = DateTime.subtract(later, { minutes: 30 })
          yield* store.eventLog.append(treeId, 0, [
            queued(0),
            opened(1, callbackId("x")),
            opened(2, callbackId("y"), treeId, sooner),
            opened(3, callbackId("z"), treeId, undefined)
          ])
          const dueBy = (time: DateTime.Utc) =>
            Effect.map(
              store.eventLog.listOpen({ expiresBy: DateTime.toEpochMillis(time) }),
              (rows) => rows.map((row) => row.callbackId)
            )
          assert.deepStrictEqual(yield* dueBy(DateTime.subtract(sooner, { milliseconds: 1 })), [])
          assert.deepStrictEqual(yield* dueBy(sooner), ["cb_y"])
          assert.deepStrictEqual(yield* dueBy(later), ["cb_x", "cb_y"])
          // Resolved: no longer due; the one without a deadline never is.
          yield* store.eventLog.append(treeId, 4, [resolved(4, callbackId("y"))])
          assert.deepStrictEqual(yield* dueBy(DateTime.add(later, { hours: 1 })), ["cb_x"])
          assert.deepStrictEqual(
            (yield* store.eventLog.listOpen({ expiresBy: DateTime.toEpochMillis(later), kind: "client_tool" })).length,
            0
          )
        })))
  })
}
