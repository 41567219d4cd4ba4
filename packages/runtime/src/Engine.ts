/**
 * The engine: runs agent turns on an event-sourced log. A turn derives its prompt from the log, streams the model,
 * evaluates the permission policy for each tool call, opens callbacks (approvals, client tool calls, sign-ins) and
 * waits for their answers, runs concurrent tool calls on separate fibers, and appends every state change as an event.
 *
 * The engine implements the `Transport` protocol port; `LocalTransport.layer` provides it in-process.
 *
 * @example
 * ```ts
 * import type { AgentSpec } from "@parley/core"
 * import { Connectors, Engine, Models, SessionStore } from "@parley/runtime"
 * import { Effect } from "effect"
 *
 * const program = (spec: AgentSpec.AgentSpec) => Effect.gen(function*() {
 *   const engine = yield* Engine.make
 *   const session = yield* engine.createSession(spec)
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Transport from "@parley/core/Transport"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Connectors } from "./Connectors.js"
import * as internal from "./internal/engine.js"
import { Models } from "./Models.js"
import { SessionStore } from "./SessionStore.js"

/**
 * Builds an engine over the store, the models and the connectors in context. Its turns run in the scope.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: Effect.Effect<Transport.Service, never, SessionStore | Models | Connectors | Scope.Scope> = Effect
  .gen(function*() {
    const store = yield* SessionStore
    const models = yield* Models
    const connectors = yield* Connectors
    return yield* internal.make(store, models, connectors)
  })
