/**
 * The `Transport` port over an in-process engine: the client API (`Agent`, `Session`, `Turn`) drives sessions in
 * the same process. The HTTP transport provides the same Tag, so a program moves across a process boundary by
 * changing one layer.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
 * import { Layer } from "effect"
 *
 * const TransportLive = LocalTransport.layer.pipe(
 *   Layer.provide([SessionStore.layerMemory, Connectors.layer([Connectors.demoMailbox()]), ModelsLive])
 * )
 * ```
 *
 * @since 0.1.0
 */
import { Transport } from "@parley/core/Transport"
import * as Layer from "effect/Layer"
import type { Connectors } from "./Connectors.js"
import * as Engine from "./Engine.js"
import type { Models } from "./Models.js"
import type { SessionStore } from "./SessionStore.js"

/**
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<Transport, never, SessionStore | Models | Connectors> = Layer.scoped(
  Transport,
  Engine.make
)

/**
 * The in-process transport with engine options (e.g. how long an idle tree stays in memory).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWith = (
  options: Engine.Options
): Layer.Layer<Transport, never, SessionStore | Models | Connectors> =>
  Layer.scoped(Transport, Engine.makeWith(options))
