/**
 * `Turn.result` over a `Transport` written by hand: the wait reads each batch of its subscription as soon as the code
 * that moved it is done (a microtask), before the event loop turns.
 */
import { assert, describe, it } from "@effect/vitest"
import { Transport, Turn, TurnEvent } from "@parley/core"
import type { Cause } from "effect"
import { DateTime, Effect, Fiber, Queue } from "effect"
import { sessionId, turnId } from "./fixtures.js"

const at = DateTime.makeUnsafe(0)

/** What `f` reads in a microtask queued now: after any queued before it, before the event loop turns. */
const inAMicrotask = <A>(f: () => A) =>
  Effect.promise(() => new Promise<A>((resolve) => queueMicrotask(() => resolve(f()))))

describe("Turn.result", () => {
  it.effect("sees an event of its subscription once the code that handed it on is done, before the event loop turns", () =>
    Effect.gen(function*() {
      const events = yield* Queue.unbounded<TurnEvent.TurnEvent, Cause.Done>()
      // Only what a wait with no handler and nothing blocked calls.
      const transport = {
        snapshot: () =>
          Effect.succeed(
            new Transport.TurnSnapshot({
              turn: new Transport.TurnRef({ sessionId, turnId, cursor: 0 }),
              callbacks: [],
              cursor: 0
            })
          ),
        subscribe: () => Effect.succeed(events)
      } as unknown as Transport.Service
      const seen: Array<string> = []
      const waiting = yield* Turn.result(Turn.make({ sessionId, turnId, cursor: 0, handler: undefined }), {
        onEvent: (event) => void seen.push(event._tag)
      }).pipe(Effect.provideService(Transport.Transport, transport), Effect.forkChild)
      // The wait reads its (empty) subscription.
      yield* Effect.repeat(Effect.yieldNow, { times: 10 })
      Queue.offerUnsafe(events, new TurnEvent.TurnStarted({ sessionId, turnId, seq: 0, at, input: "hi" }))
      // Its reader takes the event now ...
      Queue.flushUnsafe(events)
      // ... and the wait has it before anything the event loop would run next.
      assert.deepStrictEqual(yield* inAMicrotask(() => [...seen]), ["TurnStarted"])
      yield* Fiber.interrupt(waiting)
    }))
})
