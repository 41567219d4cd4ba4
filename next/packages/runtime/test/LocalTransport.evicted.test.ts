import { LocalTransport } from "@parley/runtime"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { runtime } from "./transports.js"

// Every tree leaves memory as soon as nothing holds it, and is rebuilt from its log for the next answer, deadline or
// query: the whole contract holds across evictions.
TransportSuite.suite(
  "LocalTransport, idle trees evicted at once",
  runtime(LocalTransport.layerWith({ idleTimeToLive: 0 }))
)
