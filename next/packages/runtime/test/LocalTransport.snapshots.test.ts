import { LocalTransport } from "@parley/runtime"
import * as TransportSuite from "@parley/testing/TransportSuite"
import { runtime } from "./transports.js"

// The same, with a snapshot of the projection saved after every commit: a tree is rebuilt from its latest snapshot and
// the events after it.
TransportSuite.suite(
  "LocalTransport, idle trees evicted at once and rebuilt from snapshots",
  runtime(LocalTransport.layerWith({ idleTimeToLive: 0, snapshotEvery: 1 }))
)
