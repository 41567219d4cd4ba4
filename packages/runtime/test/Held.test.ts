/**
 * The engine's trees in memory (`Held`): loaded once, held by calls and by their own work, evicted when idle. A loaded
 * value's own work starts in `loaded`, when the value is in memory: that work can hold it, and the value is not
 * evicted under it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as Held from "../src/internal/held.js"

interface Value {
  readonly key: string
  closed: boolean
}

const settle = Effect.repeat(Effect.yieldNow, { times: 200 })

describe("Held", () => {
  it.effect("a loaded value's work, started in `loaded`, holds it: not evicted until the work lets go", () =>
    Effect.gen(function*() {
      const loads: Array<string> = []
      const seen: Array<{ readonly inMemory: boolean; readonly held: boolean }> = []
      const workDone = yield* Deferred.make<void>()
      const held: Held.Held<string, Value, never> = yield* Held.make<string, Value, never>({
        idleTimeToLive: "10 millis",
        // The value's scope is the load's: closed when the value is evicted.
        load: (key) =>
          Effect.gen(function*() {
            loads.push(key)
            const value: Value = { key, closed: false }
            yield* Effect.addFinalizer(() => Effect.sync(() => (value.closed = true)))
            return value
          }),
        loaded: (key, value) =>
          Effect.gen(function*() {
            const took = held.hold(key, value)
            seen.push({ inMemory: held.get(key) === value, held: took })
            // The value's own work: it lets go when it is done.
            yield* Effect.forkDetach(Effect.andThen(Deferred.await(workDone), held.release(key, value)))
          })
      })
      const value = yield* held.holding("tree", Effect.succeed, (error) => error)
      assert.deepStrictEqual(seen, [{ inMemory: true, held: true }])
      yield* TestClock.adjust("1 second")
      yield* settle
      assert.isFalse(value.closed, "held by its work: not evicted")
      assert.strictEqual(held.get("tree"), value)
      yield* Deferred.succeed(workDone, undefined)
      yield* settle
      yield* TestClock.adjust("10 millis")
      yield* settle
      assert.isTrue(value.closed, "idle once its work is done: evicted after the time-to-live")
      assert.isUndefined(held.get("tree"))
      // Asked again, it is loaded again, once, however many ask at once.
      const again = yield* Effect.all(
        Array.from({ length: 5 }, () => held.holding("tree", Effect.succeed, (error) => error)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(again).size, 1)
      assert.deepStrictEqual(loads, ["tree", "tree"])
    }))

  it.effect("a hold on a value not in memory is refused, and its release changes nothing", () =>
    Effect.gen(function*() {
      const held = yield* Held.make<string, Value, never>({
        idleTimeToLive: "10 millis",
        load: (key) => Effect.succeed({ key, closed: false })
      })
      const stranger: Value = { key: "tree", closed: false }
      assert.isFalse(held.hold("tree", stranger))
      const fiber = yield* Effect.forkChild(held.holding("tree", (value) => Effect.as(Effect.never, value), (e) => e))
      yield* settle
      const value = held.get("tree")!
      assert.isFalse(held.hold("tree", stranger), "another value under the same key")
      yield* held.release("tree", stranger)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(held.get("tree"), value, "still held by the running call")
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust("10 millis")
      yield* settle
      assert.isUndefined(held.get("tree"))
    }))
})
