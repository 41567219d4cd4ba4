/**
 * What the engine reports about its work, with Effect's own `Tracer` and `Metric`: nothing leaves the process unless
 * the program provides a tracer (`@parley/telemetry`'s `ParleyTelemetry.layer` sends spans and metrics over OTLP).
 *
 * Spans (made only when the fiber working on a tree runs under a tracer other than Effect's native one):
 *
 * | span | when | attributes |
 * |---|---|---|
 * | `parley.turn` | from `TurnQueued` to `TurnEnded` (a child of the caller's span, else a root) | `parley.session.id`, `parley.turn.id`, `parley.agent.name`, `parley.turn.state`, `parley.turn.steps` |
 * | `parley.model_step` | a model call, under its turn (`effect/ai`'s `LanguageModel.streamText` span, with the provider's GenAI attributes, is its child) | `parley.model_step.index`, `gen_ai.request.model` |
 * | `parley.tool` | a tool the runtime runs (the spans its code makes are children) | `parley.tool.id`, `parley.tool.runs_in`, `parley.tool.outcome` |
 * | `parley.callback` | from `CallbackOpened` to `CallbackResolved` | `parley.callback.kind`, `parley.tool.id`, `parley.callback.resolution`, `parley.callback.wait_ms`, `parley.callback.answer`, `parley.callback.answered_by` (`Principal.describe`), `parley.callback.answered_by.kind` |
 * | `parley.store.append` | each append to the tree's log by a store that writes it (a SQL store; the memory store, which keeps the events as values, makes none unless the append fails or is cut short) | `parley.store.events`, `parley.store.bytes` (what the store wrote: the events' JSON text in UTF-8) |
 *
 * The engine that accepts a turn records its span's trace context on the `TurnQueued` (`trace`). An engine that takes
 * the turn up later — another process answering it, a restart — makes its own `parley.turn` span for it, with a span
 * link to that context and `parley.turn.resumed: true`; a span whose tree left memory first ends with
 * `parley.turn.suspended: true`.
 *
 * Metrics (counted by the engine that owns the tree, when it traces): `turns` (tagged `parley.turn.state`),
 * `modelSteps`, `toolRuns`, `callbackWait` (milliseconds), `callbacksOpen`.
 *
 * @example
 * ```ts
 * import { EngineTelemetry } from "@parley/runtime"
 * import { Effect, Metric } from "effect"
 *
 * // How many turns this process's engine completed so far.
 * const completed = Metric.value(Metric.withAttributes(EngineTelemetry.turns, { "parley.turn.state": "Completed" }))
 * export const report = Effect.flatMap(completed, (state) => Effect.log(`completed turns: ${state.count}`))
 * ```
 *
 * @since 0.1.0
 */
import type * as Metric from "effect/Metric"
import * as internal from "./internal/metrics.js"

/**
 * Turns ended, tagged `parley.turn.state`: `Completed`, `Failed`, `Cancelled`.
 *
 * @since 0.1.0
 * @category Models
 */
export const turns: Metric.Counter<number> = internal.turnsEnded

/**
 * Model steps started.
 *
 * @since 0.1.0
 * @category Models
 */
export const modelSteps: Metric.Counter<number> = internal.modelSteps

/**
 * Tools the runtime started (its own tools and connectors'; client tools are callbacks).
 *
 * @since 0.1.0
 * @category Models
 */
export const toolRuns: Metric.Counter<number> = internal.toolRuns

/**
 * Time from a callback's opening to its resolution, in milliseconds.
 *
 * @since 0.1.0
 * @category Models
 */
export const callbackWait: Metric.Histogram<number> = internal.callbackWait

/**
 * Callbacks open in the trees this process owns (an up-down counter: +1 opened, -1 resolved).
 *
 * @since 0.1.0
 * @category Models
 */
export const callbacksOpen: Metric.Counter<number> = internal.callbacksOpen
