/**
 * The engine's channel for live-only events (`engine/live.ts`): a reader of a tree gets the stored events of the log
 * (here the memory store's `subscribe`) with the deltas of this process's model steps merged in, each after the stored
 * event of its step. A delta of a step the reader has not reached waits for it; one before the reader's cursor, or of
 * another session than the one it reads, is not for it. Nothing of it is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SessionStore } from "@parley/runtime"
import type { Cause } from "effect"
import { DateTime, Effect, Exit, Option, Queue, Scope } from "effect"
import * as Live from "../src/internal/engine/live.js"

const treeId = Ids.SessionId.make("ses_live")
const childId = Ids.SessionId.make("ses_live_child")
const turnId = Ids.TurnId.make("turn_live")
const at = DateTime.makeUnsafe(0)
const queued = (seq: number, sessionId = treeId) =>
  new TurnEvent.TurnQueued({ sessionId, turnId, seq, at, input: `message ${seq}` })
const delta = (seq: number, text = "x", sessionId = treeId) =>
  new TurnEvent.MessageDelta({ sessionId, turnId, seq, at, messageId: "msg_1", delta: text })

const tags = (events: ReadonlyArray<TurnEvent.TurnEvent>) =>
  events.map((event) =>
    event._tag === "MessageDelta" ? `delta ${event.seq} ${event.delta}` : `${event._tag} ${event.seq}`
  )

/** What `f` reads in a microtask queued now: after any queued before it, before the event loop turns. */
const inAMicrotask = <A>(f: () => A) =>
  Effect.promise(() => new Promise<A>((resolve) => queueMicrotask(() => resolve(f()))))

/** Lets the reader's fiber hand on what came. */
const settled = Effect.repeat(Effect.yieldNow, { times: 50 })

const setup = Effect.gen(function*() {
  const store = yield* SessionStore.makeMemory
  yield* store.eventLog.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })
  const live = Live.make()
  const follow = (cursor: number, sessionId?: Ids.SessionId) =>
    Effect.flatMap(
      store.eventLog.subscribe(treeId, cursor, sessionId),
      (stored) => live.follow(treeId, cursor, sessionId, stored, (error) => error)
    )
  /** What the reader has been handed so far. */
  const taken = <E>(queue: Queue.Dequeue<TurnEvent.TurnEvent, E>) =>
    Effect.andThen(settled, Effect.map(Queue.takeAll(queue), tags))
  return { store, live, follow, taken }
})

describe("the engine's live channel", () => {
  it.effect("deltas follow the stored event of their step, in order; the log stores none of them", () =>
    Effect.gen(function*() {
      const { follow, live, store, taken } = yield* setup
      yield* store.eventLog.append(treeId, 0, [queued(0), queued(1)])
      const reader = yield* follow(0)
      assert.deepStrictEqual(yield* taken(reader), ["TurnQueued 0", "TurnQueued 1"])
      live.publish(treeId, [delta(1, "a"), delta(1, "b")])
      yield* store.eventLog.append(treeId, 2, [queued(2)])
      live.publish(treeId, [delta(2, "c")])
      assert.deepStrictEqual(yield* taken(reader), ["delta 1 a", "delta 1 b", "TurnQueued 2", "delta 2 c"])
      assert.deepStrictEqual((yield* store.eventLog.read(treeId, 0)).map((event) => event._tag), [
        "TurnQueued",
        "TurnQueued",
        "TurnQueued"
      ])
    }))

  it.effect("a delta of a step the reader has not reached waits for that step; one before its cursor is dropped", () =>
    Effect.gen(function*() {
      const { follow, live, store, taken } = yield* setup
      yield* store.eventLog.append(treeId, 0, [queued(0), queued(1), queued(2)])
      const fromTwo = yield* follow(2)
      // Published before the reader's fiber handed on anything: the step of seq 2 is not passed yet.
      live.publish(treeId, [delta(1, "old"), delta(2, "a"), delta(3, "b")])
      assert.deepStrictEqual(yield* taken(fromTwo), ["TurnQueued 2", "delta 2 a"])
      yield* store.eventLog.append(treeId, 3, [queued(3), queued(4)])
      assert.deepStrictEqual(yield* taken(fromTwo), ["TurnQueued 3", "delta 3 b", "TurnQueued 4"])
    }))

  it.effect("a reader of one session gets that session's deltas only", () =>
    Effect.gen(function*() {
      const { follow, live, store, taken } = yield* setup
      yield* store.eventLog.append(treeId, 0, [queued(0), queued(1, childId)])
      const child = yield* follow(0, childId)
      const root = yield* follow(0)
      assert.deepStrictEqual(yield* taken(child), ["TurnQueued 1"])
      assert.deepStrictEqual(yield* taken(root), ["TurnQueued 0", "TurnQueued 1"])
      live.publish(treeId, [delta(0, "root's"), delta(1, "child's", childId)])
      assert.deepStrictEqual(yield* taken(child), ["delta 1 child's"])
      assert.deepStrictEqual(yield* taken(root), ["delta 0 root's", "delta 1 child's"])
    }))

  it.effect("a reader whose scope closed gets nothing more; publishing to a tree nobody reads is fine", () =>
    Effect.gen(function*() {
      const { follow, live, store, taken } = yield* setup
      yield* store.eventLog.append(treeId, 0, [queued(0)])
      const scope = yield* Scope.make()
      const reader = yield* Scope.provide(follow(0), scope)
      assert.deepStrictEqual(yield* taken(reader), ["TurnQueued 0"])
      yield* Scope.close(scope, Exit.void)
      live.publish(treeId, [delta(0)])
      live.publish(Ids.SessionId.make("ses_nobody"), [delta(0)])
      // Still open, and empty.
      assert.strictEqual(reader.state._tag, "Open")
      assert.deepStrictEqual(yield* Queue.poll(reader), Option.none())
    }))

  it.effect("pushed: a waiting reader has what was handed on once that code is done, before the event loop turns", () =>
    Effect.gen(function*() {
      const live = Live.make()
      const stored = yield* Queue.unbounded<TurnEvent.TurnEvent, Cause.Done>()
      const reader = yield* live.follow(treeId, 0, undefined, stored, (error) => error)
      const taken: Array<string> = []
      yield* Effect.forkChild(Effect.forever(Effect.map(Queue.takeAll(reader), (batch) => taken.push(...tags(batch)))))
      yield* settled
      // A stored event, its follower woken at once (as the log's fan-out wakes it), then a live delta of its step.
      Queue.offerUnsafe(stored, queued(0))
      Queue.flushUnsafe(stored)
      live.publish(treeId, [delta(0, "a")])
      assert.deepStrictEqual(taken, [])
      assert.deepStrictEqual(yield* inAMicrotask(() => [...taken]), ["TurnQueued 0", "delta 0 a"])
    }))
})
