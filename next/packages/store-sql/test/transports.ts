/**
 * The engine over a SQL store, as the transport suites run it: with the suite's model and runtime tools.
 */
import type { SessionStore } from "@parley/runtime"
import { Connectors, LocalTransport, Models, RuntimeTools } from "@parley/runtime"
import type * as TransportSuite from "@parley/testing/TransportSuite"
import { Layer } from "effect"

export const runtime =
  (store: Layer.Layer<SessionStore.SessionStore, unknown>) =>
  (model: Parameters<typeof Models.single>[0], { runtimeTools }: TransportSuite.RuntimeOptions) =>
    LocalTransport.layer.pipe(
      Layer.provide([
        Layer.orDie(store),
        Connectors.layer([Connectors.demoMailbox()]),
        RuntimeTools.layer(...runtimeTools),
        Models.layer(Models.single(model))
      ])
    )
