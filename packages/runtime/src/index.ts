/**
 * Connectors: named sources of tools that need the user's sign-in.
 *
 * @since 0.1.0
 */
export * as Connectors from "./Connectors.js"

/**
 * Credentials of a session tree (a connector's OAuth tokens), encrypted at rest with `PARLEY_SECRET_KEY`.
 *
 * @since 0.1.0
 */
export * as Credentials from "./Credentials.js"

/**
 * The engine: runs agent turns on an event-sourced log.
 *
 * @since 0.1.0
 */
export * as Engine from "./Engine.js"

/**
 * What the engine reports about its work: spans and metrics, with Effect's own `Tracer` and `Metric`.
 *
 * @since 0.1.0
 */
export * as EngineTelemetry from "./EngineTelemetry.js"

/**
 * The `Transport` port over an in-process engine.
 *
 * @since 0.1.0
 */
export * as LocalTransport from "./LocalTransport.js"

/**
 * Model selection: agent → `effect/ai` `LanguageModel`.
 *
 * @since 0.1.0
 */
export * as Models from "./Models.js"

/**
 * Tools the runtime runs: handlers of the program's tools, answered by the engine with no client waiting.
 *
 * @since 0.1.0
 */
export * as RuntimeTools from "./RuntimeTools.js"

/**
 * The session store: append-only event logs.
 *
 * @since 0.1.0
 */
export * as SessionStore from "@parley/log/SessionStore"
