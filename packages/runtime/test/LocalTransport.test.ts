import { Connectors, LocalTransport, Models, SessionStore } from "@parley/runtime"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { Layer } from "effect"

const runtime = (transport: typeof LocalTransport.layer) => (model: Parameters<typeof Models.single>[0]) =>
  transport.pipe(
    Layer.provide([
      SessionStore.layerMemory,
      Connectors.layer([Connectors.demoMailbox()]),
      Models.layer(Models.single(model))
    ])
  )

TransportSuite.suite("LocalTransport", runtime(LocalTransport.layer))

// Every tree leaves memory as soon as nothing holds it, and is rebuilt from its log for the next answer, deadline or
// query: the whole contract holds across evictions.
TransportSuite.suite(
  "LocalTransport, idle trees evicted at once",
  runtime(LocalTransport.layerWith({ idleTimeToLive: 0 }))
)
