/**
 * The log layer's services on `@effect/sql` (SQLite and PostgreSQL), put together from their parts:
 * - `database.ts`: the dialect, write transactions (and the wait for another process's lock), migrations;
 * - `driver.ts`: the event log's row-level driver — group commit (`writes.ts`), reads (`reads.ts`), open callbacks,
 *   appends by other processes (`sqliteChanges.ts` / `pgChanges.ts`) — under `@parley/log`'s `EventLog.make`,
 *   which adds the in-process fan-out and `changes`;
 * - `leases.ts`: owners, claims, recovery's lists;
 * - `trees.ts`: snapshots and secrets;
 * - `outbox.ts`: the webhook outbox's routing, claims and delivery log (its entries are the appends' own rows).
 */
import * as EventLog from "@parley/log/EventLog"
import type { Services } from "@parley/log/SessionStore"
import type { StoreError } from "@parley/log/StoreError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as SqlClient from "effect/sql/SqlClient"
import * as Database from "./database.js"
import * as Driver from "./driver.js"
import * as Leases from "./leases.js"
import * as Outbox from "./outbox.js"
import * as Trees from "./trees.js"
import * as Writes from "./writes.js"

export type Options = Database.Options

export const syncedCommits = Writes.syncedCommits

export const pgStartupParameters = Database.pgStartupParameters

/** The event log's driver alone (its contract suite). */
export const makeDriver = (
  options: Options = {}
): Effect.Effect<EventLog.Driver, StoreError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.flatMap(Database.open(options), (database) => Driver.make(database, options))

export const make = (
  options: Options = {}
): Effect.Effect<Services, StoreError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const database = yield* Database.open(options)
    const eventLog = yield* EventLog.make(yield* Driver.make(database, options))
    return {
      eventLog,
      leases: Leases.make(database),
      snapshots: Trees.snapshots(database),
      secrets: Trees.secrets(database),
      outbox: Outbox.make(database)
    }
  })
