/**
 * The engine's metrics, with Effect's own `Metric` (exported when a program provides a metrics exporter, e.g.
 * `@parley/telemetry`): turns by final state, model steps, tool runs, callback wait time, callbacks open. Counted by
 * the tree's owner only (a follower sees the same events).
 */
import * as Metric from "effect/Metric"

/** Turns ended, tagged `parley.turn.state` (Completed, Blocked is never final, Failed, Cancelled). */
export const turnsEnded = Metric.counter("parley.turns", { description: "Turns ended, by final state" })
/** Model steps started. */
export const modelSteps = Metric.counter("parley.model_steps", { description: "Model steps started" })
/** Tool runs the runtime started (tools it runs itself, connectors included). */
export const toolRuns = Metric.counter("parley.tool_runs", { description: "Tools the runtime started" })
/** How long callbacks waited for their resolution, in milliseconds. */
export const callbackWait = Metric.histogram("parley.callback.wait", {
  description: "Time from a callback's opening to its resolution, in milliseconds",
  boundaries: Metric.exponentialBoundaries({ start: 1, factor: 4, count: 12 })
})
/** Callbacks open in the trees this process owns (an up-down counter). */
export const callbacksOpen = Metric.counter("parley.callbacks.open", { description: "Callbacks open" })

/** `turnsEnded` with each final state as its attribute, made once (each makes a new metric key, hashed at each lookup). */
const turnsEndedByState = new Map<string, Metric.Counter<number>>()
export const turnsEndedIn = (state: string) => {
  let metric = turnsEndedByState.get(state)
  if (metric === undefined) {
    metric = Metric.withAttributes(turnsEnded, { "parley.turn.state": state })
    turnsEndedByState.set(state, metric)
  }
  return metric
}
