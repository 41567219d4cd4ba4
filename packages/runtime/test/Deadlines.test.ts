/**
 * The engine's deadline structure: one timer fiber on `Clock` for every deadline (callbacks' expiries, idle trees'
 * evictions). Each deadline fires once, at its time; a cancelled one never; an earlier one wakes the timer; and one
 * scheduled while the timer fires a large batch (by the fibers that batch starts) fires at its own time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as Deadlines from "../src/internal/deadlines.js"

const recorder = Effect.gen(function*() {
  const fired: Array<string> = []
  const deadlines = yield* Deadlines.make<string, string>((tree, key) =>
    Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) =>
      Effect.sync(() => {
        fired.push(`${tree}/${key}@${now}`)
      }))
  )
  return { fired, deadlines }
})

/** Lets the forked timer and the fibers it started run. */
const settle = Effect.repeat(Effect.yieldNow, { times: 50 })

describe("Deadlines", () => {
  it.effect("fire once each, in order, at their time; a cancelled one never; a re-armed one at its new time", () =>
    Effect.gen(function*() {
      const { deadlines, fired } = yield* recorder
      yield* deadlines.schedule("t", "c", 30)
      yield* deadlines.schedule("t", "a", 10)
      yield* deadlines.schedule("t", "b", 20)
      yield* deadlines.schedule("t", "gone", 15)
      deadlines.cancel("gone")
      yield* deadlines.schedule("t", "b", 25)
      assert.strictEqual(deadlines.size(), 3)
      yield* settle
      yield* TestClock.adjust(12)
      yield* settle
      assert.deepStrictEqual(fired, ["t/a@10"])
      yield* TestClock.adjust(18)
      yield* settle
      assert.deepStrictEqual(fired, ["t/a@10", "t/b@25", "t/c@30"])
      assert.strictEqual(deadlines.size(), 0)
    }))

  it.effect("an earlier deadline wakes a timer asleep until a later one", () =>
    Effect.gen(function*() {
      const { deadlines, fired } = yield* recorder
      yield* deadlines.schedule("t", "late", 1_000_000)
      yield* settle
      yield* deadlines.schedule("t", "soon", 5)
      yield* settle
      yield* TestClock.adjust(5)
      yield* settle
      assert.deepStrictEqual(fired, ["t/soon@5"])
    }))

  it.effect("deadlines scheduled while the timer fires a large batch fire at their own time", () =>
    Effect.gen(function*() {
      const fired: Array<string> = []
      let rescheduled = 0
      const deadlines: Deadlines.Deadlines<string, string> = yield* Deadlines.make<string, string>((tree, key) =>
        Effect.gen(function*() {
          const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
          fired.push(`${key}@${now}`)
          // Each of the first batch's expiries schedules another deadline, 10 ms on, as an evicted tree's reload does.
          if (key.startsWith("first-")) {
            rescheduled += 1
            yield* deadlines.schedule(tree, `next-${key}`, now + 10)
          }
        })
      )
      yield* deadlines.schedule("t", "far", 1_000_000)
      for (let i = 0; i < 3_000; i++) yield* deadlines.schedule("t", `first-${i}`, 10)
      yield* settle
      yield* TestClock.adjust(10)
      yield* Effect.repeat(Effect.yieldNow, { times: 5_000 })
      assert.strictEqual(rescheduled, 3_000)
      yield* TestClock.adjust(10)
      yield* Effect.repeat(Effect.yieldNow, { times: 5_000 })
      const next = fired.filter((entry) => entry.startsWith("next-"))
      assert.strictEqual(next.length, 3_000)
      assert.isTrue(next.every((entry) => entry.endsWith("@20")), next.find((entry) => !entry.endsWith("@20")))
      assert.strictEqual(deadlines.size(), 1)
    }))
})
