import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { Layer } from "effect"

TransportSuite.suite("LocalTransport", (model) =>
  LocalTransport.layer.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer([Connectors.demoMailbox()]),
      Models.layer(Models.single(model))
    ])
  ))
