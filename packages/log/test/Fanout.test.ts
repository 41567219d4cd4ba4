import { assert, describe, it } from "@effect/vitest"
import { Ids, TurnEvent } from "@parley/core"
import { Cause, DateTime, Effect, Queue } from "effect"
import * as Fanout from "../src/internal/fanout.js"

const treeId = Ids.SessionId.make("ses_fanout")
const turnId = Ids.TurnId.make("turn_1")
const queued = (seq: number) =>
  new TurnEvent.TurnQueued({ sessionId: treeId, turnId, seq, at: DateTime.makeUnsafe(0), input: `m${seq}` })

/** A fan-out over an array standing for a store's log. */
const over = (stored: Array<TurnEvent.TurnEvent>) =>
  Fanout.make({ read: (_, from) => Effect.succeed(stored.slice(from)), exists: () => Effect.succeed(true) })

/** The `seq`s of the next `n` events (waits for them; fewer when the queue ends first). */
const takeSeqs = (queue: Queue.Dequeue<TurnEvent.TurnEvent, unknown>, n: number) =>
  Effect.gen(function*() {
    const seen: Array<number> = []
    while (seen.length < n) {
      const batch = yield* Queue.takeAll(queue).pipe(
        Effect.catchIf(Cause.isDone, () => Effect.succeed([] as ReadonlyArray<TurnEvent.TurnEvent>))
      )
      if (batch.length === 0) break
      for (const event of batch) seen.push(event.seq)
    }
    return seen
  })

/** What `f` reads in a microtask queued now: after any queued before it, before the event loop turns. */
const inAMicrotask = <A>(f: () => A) =>
  Effect.promise(() => new Promise<A>((resolve) => queueMicrotask(() => resolve(f()))))

describe("Fanout", () => {
  it.effect("hands the store's own append to a subscriber, after what was stored before it", () =>
    Effect.gen(function*() {
      const stored = [queued(0)]
      const fanout = over(stored)
      const mailbox = yield* fanout.subscribe(treeId, 0)
      stored.push(queued(1))
      fanout.appended(treeId, [queued(1)])
      assert.deepStrictEqual(yield* takeSeqs(mailbox, 2), [0, 1])
    }))

  it.effect("reads what another process appended when told the log moved", () =>
    Effect.gen(function*() {
      const stored: Array<TurnEvent.TurnEvent> = []
      const fanout = over(stored)
      const mailbox = yield* fanout.subscribe(treeId, 0)
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      stored.push(queued(0), queued(1), queued(2))
      fanout.moved(treeId, 3)
      assert.deepStrictEqual(yield* takeSeqs(mailbox, 3), [0, 1, 2])
    }))

  it.effect("pushes an append to a waiting subscriber as soon as the appender's code is done, before the event loop turns", () =>
    Effect.gen(function*() {
      const stored: Array<TurnEvent.TurnEvent> = []
      const fanout = over(stored)
      const mailbox = yield* fanout.subscribe(treeId, 0)
      const taken: Array<number> = []
      yield* Effect.forkChild(Effect.forever(
        Effect.map(Queue.takeAll(mailbox), (batch) => taken.push(...batch.map((event) => event.seq)))
      ))
      // The taker waits on the empty mailbox.
      yield* Effect.repeat(Effect.yieldNow, { times: 5 })
      stored.push(queued(0))
      fanout.appended(treeId, [queued(0)])
      // Not inside the append (the appender's own state is not updated yet) ...
      assert.deepStrictEqual(taken, [])
      // ... but before anything the event loop would run next (Effect's queue alone wakes a taker a turn later).
      assert.deepStrictEqual(yield* inAMicrotask(() => [...taken]), [0])
    }))
})
