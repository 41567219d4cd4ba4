/**
 * Waking a `Queue`'s taker as soon as the code that offered to it is done. Effect's `Queue` wakes a waiting taker at
 * the scheduler's next round, a turn of the event loop later (under load, milliseconds); a hand-over flushes it in a
 * microtask instead, once per burst of offers, never inside the offering code itself (whose state may not be updated
 * yet). The log's fan-out, the engine's live channel, `Turn.result`'s wait and the HTTP transport's subscriptions hand
 * their events on this way.
 *
 * @example
 * ```ts
 * import { Handover } from "@parley/core"
 * import { Effect, Queue } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const queue = yield* Queue.unbounded<number>()
 *   const handOver = Handover.make(queue)
 *   Queue.offerUnsafe(queue, 1)
 *   handOver() // the taker runs once this code is done
 *   return yield* Queue.take(queue)
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Queue from "effect/Queue"

/**
 * A function that schedules one flush of `queue` in a microtask (calls before it runs share it).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = <A, E>(queue: Queue.Queue<A, E>): () => void => {
  let due = false
  return () => {
    if (due) return
    due = true
    queueMicrotask(() => {
      due = false
      Queue.flushUnsafe(queue)
    })
  }
}
