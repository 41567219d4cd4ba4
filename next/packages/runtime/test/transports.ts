/**
 * The engine over the memory store, as the transport suites run it: with the suite's model and runtime tools.
 */
import { Connectors, type LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import type * as TransportSuite from "@parley/testing/TransportSuite"
import { Layer } from "effect"

export const runtime = (transport: typeof LocalTransport.layer) =>
(
  model: Parameters<typeof Models.single>[0],
  { runtimeTools }: TransportSuite.RuntimeOptions
) =>
  transport.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer([Connectors.demoMailbox()]),
      RuntimeTools.layer(...runtimeTools),
      Models.layer(Models.single(model))
    ])
  )
