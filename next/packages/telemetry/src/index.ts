/**
 * OpenTelemetry for Parley: the engine's spans and metrics, exported over OTLP or through the OpenTelemetry SDK.
 *
 * @since 0.1.0
 */
export * as ParleyTelemetry from "./ParleyTelemetry.js"
