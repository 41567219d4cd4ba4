import * as EventLogDriverSuite from "@parley/testing/EventLogDriverSuite"
import { pgDriver, sqliteDriver } from "./databases.js"

// The event log's row-level driver on its own, below `EventLog.make`: the rows of an append written all or none.
EventLogDriverSuite.suite("SqlStore.makeDriver on SQLite", sqliteDriver)

EventLogDriverSuite.suite("SqlStore.makeDriver on PostgreSQL", pgDriver)
