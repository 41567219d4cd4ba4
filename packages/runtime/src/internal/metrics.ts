/**
 * The engine's metrics, with Effect's own `Metric` (exported when a program provides a metrics exporter, e.g.
 * `@parley/telemetry`): turns by final state, model steps, tool runs, callback wait time, callbacks open. Counted by
 * the tree's owner only (a follower sees the same events).
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import type * as MetricLabel from "effect/MetricLabel"

/** Turns ended, tagged `parley.turn.state` (Completed, Blocked is never final, Failed, Cancelled). */
export const turnsEnded = Metric.counter("parley.turns", { description: "Turns ended, by final state" })
/** Model steps started. */
export const modelSteps = Metric.counter("parley.model_steps", { description: "Model steps started" })
/** Tool runs the runtime started (tools it runs itself, connectors included). */
export const toolRuns = Metric.counter("parley.tool_runs", { description: "Tools the runtime started" })
/** How long callbacks waited for their resolution, in milliseconds. */
export const callbackWait = Metric.histogram(
  "parley.callback.wait",
  MetricBoundaries.exponential({ start: 1, factor: 4, count: 12 }),
  "Time from a callback's opening to its resolution, in milliseconds"
)
/** Callbacks open in the trees this process owns (an up-down counter). */
export const callbacksOpen = Metric.counter("parley.callbacks.open", { description: "Callbacks open" })

/** `turnsEnded` tagged with each final state, made once (tagging makes a new metric key, hashed at each lookup). */
const turnsEndedByState = new Map<string, Metric.Metric.Counter<number>>()
export const turnsEndedIn = (state: string) => {
  let metric = turnsEndedByState.get(state)
  if (metric === undefined) {
    metric = Metric.tagged(turnsEnded, "parley.turn.state", state)
    turnsEndedByState.set(state, metric)
  }
  return metric
}

/** A metric and the value it is updated with (a counter's increment, a histogram's sample). */
export type Update = readonly [
  { readonly unsafeUpdate: (input: number, labels: ReadonlyArray<MetricLabel.MetricLabel>) => void },
  number
]

/**
 * Applies the updates in one step of the fiber, with the fiber's metric labels: what `Metric.update` does for each,
 * without an effect (and its steps of the runtime) per update.
 */
export const count = (updates: ReadonlyArray<Update>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
    for (const [metric, value] of updates) metric.unsafeUpdate(value, labels)
    return Effect.void
  })
