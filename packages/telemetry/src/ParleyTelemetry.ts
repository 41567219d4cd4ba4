/**
 * OpenTelemetry for Parley. The engine (`@parley/runtime`) writes its spans and metrics with Effect's own `Tracer` and
 * `Metric`, and exports nothing by itself; a program that wants them provides one of these layers:
 *
 * - `layer({ serviceName })`: spans, metrics and logs sent over OTLP/HTTP (JSON) to a collector — Jaeger, Grafana
 *   Tempo, an OpenTelemetry Collector — at `http://localhost:4318` unless `url` says otherwise. No OpenTelemetry SDK
 *   runs: `@effect/opentelemetry`'s `Otlp` speaks the protocol itself.
 * - `layerSdk({ serviceName, spanProcessor })`: the OpenTelemetry JS SDK with the program's own span processors and
 *   metric readers (`InMemorySpanExporter` in tests, `ConsoleSpanExporter` to read spans in a terminal, any exporter
 *   of the OpenTelemetry ecosystem).
 *
 * Spans: `parley.turn` (a turn, from `TurnQueued` to `TurnEnded`), and under it `parley.model_step` (with the GenAI
 * attributes a provider sets on `effect/ai`'s own span below it), `parley.tool`, `parley.callback` and
 * `parley.store.append`. A turn taken up by another engine links its span there to the first (the context is stored
 * on `TurnQueued`). Metrics: `parley.turns` (by `parley.turn.state`), `parley.model_steps`, `parley.tool_runs`,
 * `parley.callback.wait` (milliseconds), `parley.callbacks.open`.
 *
 * @example
 * ```ts
 * import { ParleyTelemetry } from "@parley/telemetry"
 * import { Effect } from "effect"
 *
 * const program = Effect.log("a turn") // the program, its runtime layers provided
 *
 * // Everything its engine does, sent to a local Jaeger (`docker run -p 16686:16686 -p 4318:4318 jaegertracing/all-in-one`).
 * export const traced = program.pipe(Effect.provide(ParleyTelemetry.layer({ serviceName: "support-agent" })))
 * ```
 *
 * @since 0.1.0
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelMetrics from "@effect/opentelemetry/OtelMetrics"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import * as Resource from "@effect/opentelemetry/Resource"
import type { MetricReader } from "@opentelemetry/sdk-metrics"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { NonEmptyReadonlyArray } from "effect/Array"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Layer from "effect/Layer"
import * as Otlp from "effect/observability/Otlp"
import * as Tracer from "effect/Tracer"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** The `service.name` of the resource every span and metric carries. */
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  /** The collector's OTLP/HTTP base URL (`/v1/traces`, `/v1/metrics`, `/v1/logs` are added): `http://localhost:4318`. */
  readonly url?: string | undefined
  /** Headers sent with every export (an API key of a hosted collector). */
  readonly headers?: Record<string, string> | undefined
  /** How often spans are sent (5 seconds). */
  readonly exportInterval?: Duration.Input | undefined
}

/**
 * Spans, metrics and logs of the program (the engine's included) exported over OTLP/HTTP with JSON bodies, sent by
 * `fetch`. Provide it to the whole program: the engine traces the trees worked on under it.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<never> =>
  Otlp.layerJson({
    baseUrl: options.url ?? "http://localhost:4318",
    resource: { serviceName: options.serviceName, serviceVersion: options.serviceVersion },
    headers: options.headers,
    tracerExportInterval: options.exportInterval,
    metricsExportInterval: options.exportInterval
  }).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * @since 0.1.0
 * @category Models
 */
export interface SdkOptions {
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  /** Where spans go: e.g. `new SimpleSpanProcessor(new InMemorySpanExporter())`. */
  readonly spanProcessor: SpanProcessor | NonEmptyReadonlyArray<SpanProcessor>
  /** Where metrics go: e.g. `new PeriodicExportingMetricReader({ exporter })`. */
  readonly metricReader?: MetricReader | NonEmptyReadonlyArray<MetricReader> | undefined
  /**
   * Whether the OpenTelemetry context (`@opentelemetry/api`'s `context.active()`) follows Effect's current span, so
   * that libraries instrumented with OpenTelemetry itself (an HTTP client's instrumentation) nest their spans under
   * Parley's. Off by default: it wraps every step of every traced fiber in the SDK's context manager, which costs
   * the engine about half its speed on the approval loop (`npm run bench -- --only=telemetry`).
   */
  readonly propagateContext?: boolean | undefined
}

/**
 * The OpenTelemetry JS SDK as the program's tracer (and meter, given a reader), with the program's processors: the
 * in-memory exporter of a test, the console exporter, or any OpenTelemetry exporter. Spans are flushed when the layer
 * is released.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSdk = (options: SdkOptions): Layer.Layer<Resource.Resource> => {
  const resource = Resource.layer({
    serviceName: options.serviceName,
    ...(options.serviceVersion === undefined ? {} : { serviceVersion: options.serviceVersion })
  })
  const processors = Array.isArray(options.spanProcessor)
    ? options.spanProcessor as NonEmptyReadonlyArray<SpanProcessor>
    : options.spanProcessor as SpanProcessor
  const provider = NodeSdk.layerTracerProvider(processors)
  // Without propagation, the SDK's spans and nothing else: a tracer with no `context` of its own lets the fiber
  // runtime run each step as it is, as under Effect's native tracer.
  const tracer = options.propagateContext === true
    ? OtelTracer.layer
    : Layer.effect(
      Tracer.Tracer,
      Effect.map(OtelTracer.make, (otel) => Tracer.make({ span: (spanOptions) => otel.span(spanOptions) }))
    ).pipe(Layer.provide(OtelTracer.layerTracer))
  const reader = options.metricReader
  const metrics = reader === undefined ? Layer.empty : OtelMetrics.layer(() => reader)
  return Layer.mergeAll(Layer.provide(tracer, provider), metrics).pipe(Layer.provideMerge(resource))
}
