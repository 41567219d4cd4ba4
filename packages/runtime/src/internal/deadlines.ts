/**
 * The deadlines of every open callback of the process in one ordered structure, served by one timer fiber on `Clock`
 * (so tests move it with `TestClock`). A deadline costs an entry, not a fiber: a paused turn holds no timer. The
 * engine keeps a second one for the idle trees it evicts (keyed by tree).
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

interface Entry<K extends string, T> {
  readonly at: number
  readonly treeId: T
  readonly callbackId: K
}

/** Deadlines keyed by `K` (a callback's id), each telling its tree `T` when it passes. */
export interface Deadlines<K extends string = CallbackId, T = SessionId> {
  /** Arms (or re-arms) the deadline of a callback, in epoch milliseconds. */
  readonly schedule: (treeId: T, callbackId: K, at: number) => Effect.Effect<void>
  readonly cancel: (callbackId: K) => void
  readonly size: () => number
}

/** A binary min-heap on `at`; cancelled entries are dropped lazily when they reach the top. */
class Heap<K extends string, T> {
  private items: Array<Entry<K, T>> = []
  /** Keeps only `keep` (after many cancels, so dropped entries do not pile up until their time). */
  rebuild(keep: Iterable<Entry<K, T>>) {
    const entries = [...keep]
    this.items = []
    for (const entry of entries) this.push(entry)
  }
  get size() {
    return this.items.length
  }
  peek(): Entry<K, T> | undefined {
    return this.items[0]
  }
  push(entry: Entry<K, T>) {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent].at <= items[i].at) break
      ;[items[parent], items[i]] = [items[i], items[parent]]
      i = parent
    }
  }
  pop(): Entry<K, T> | undefined {
    const items = this.items
    const top = items[0]
    const end = items.pop()
    if (items.length > 0 && end !== undefined) {
      items[0] = end
      let i = 0
      while (true) {
        const left = 2 * i + 1
        const right = left + 1
        let smallest = i
        if (left < items.length && items[left].at < items[smallest].at) smallest = left
        if (right < items.length && items[right].at < items[smallest].at) smallest = right
        if (smallest === i) break
        ;[items[smallest], items[i]] = [items[i], items[smallest]]
        i = smallest
      }
    }
    return top
  }
}

/** Starts the timer fiber in `scope`; `expire` is called (in a fiber of its own) for each deadline that passes. */
export const make = <K extends string = CallbackId, T = SessionId>(
  expire: (treeId: T, callbackId: K) => Effect.Effect<void>
): Effect.Effect<Deadlines<K, T>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const heap = new Heap<K, T>()
    /** The live entry of each callback: an entry in the heap that is not here any more was cancelled. */
    const live = new Map<K, Entry<K, T>>()
    const wake = yield* Queue.sliding<void>(1)
    /** When the timer fiber wakes next (it is woken early only for an earlier deadline). */
    let armedAt = Number.POSITIVE_INFINITY

    /**
     * Fires what is due and says how long to sleep. `armedAt` is set in the same synchronous step as the last look at
     * the heap: a deadline scheduled after that look (by another fiber, while this one is suspended between steps)
     * either is later than what the timer wakes for, or wakes it.
     */
    const fireDue = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      while (true) {
        const top = heap.peek()
        if (top === undefined) {
          armedAt = Number.POSITIVE_INFINITY
          return undefined
        }
        if (live.get(top.callbackId) !== top) {
          heap.pop()
          continue
        }
        if (top.at > now) {
          armedAt = top.at
          return top.at - now
        }
        heap.pop()
        live.delete(top.callbackId)
        yield* Effect.forkDetach(expire(top.treeId, top.callbackId))
      }
    })

    yield* Effect.gen(function*() {
      while (true) {
        const wait = yield* fireDue
        const sleep = wait === undefined ? Effect.never : Effect.sleep(Duration.millis(wait))
        yield* Effect.raceFirst(sleep, Queue.take(wake))
      }
    }).pipe(Effect.forkScoped)

    return {
      schedule: (treeId, callbackId, at) =>
        Effect.suspend(() => {
          const current = live.get(callbackId)
          if (current !== undefined && current.at === at) return Effect.void
          const entry = { at, treeId, callbackId }
          live.set(callbackId, entry)
          heap.push(entry)
          return at < armedAt ? Queue.offer(wake, undefined) : Effect.void
        }),
      cancel: (callbackId) => {
        live.delete(callbackId)
        if (heap.size > 1_024 && heap.size > 2 * live.size) heap.rebuild(live.values())
      },
      size: () => live.size
    }
  })
