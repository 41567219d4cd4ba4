/**
 * The session store contract suite: the behaviour every store (`@parley/log`'s services — `EventLog` over its
 * driver, `Leases`, `Snapshots`, `Secrets` — as one `SessionStore`) must show,
 * so the memory store and the SQL stores (SQLite, PostgreSQL) are held to the same assertions.
 *
 * Import it as `@parley/testing/SessionStoreSuite`: it registers `@effect/vitest` tests, so it loads vitest, and the
 * `@parley/testing` index leaves it out.
 *
 * `suite(name, makeDatabase)` registers one `describe` block. Every scenario runs `makeDatabase` for a fresh, empty
 * database (a temporary SQLite file, a fresh PostgreSQL schema, …) and opens stores on it with `open`; the scenarios
 * of "another process" open it twice and expect the two stores to see each other's writes, as two processes on one
 * database would (a memory store, which lives in one process, returns the same store from every `open`). A database
 * that can store a row that does not decode offers `corrupt(treeId, seq)`; the suite then checks that such a row is a
 * `StoreError`.
 *
 * Covered: tree headers and the session index (`treeOf` for every session seen in a tree's events), appends all or
 * none at the expected seq (`SeqConflict` with the log's length, nothing left behind), one resolution per callback
 * (`ResolutionConflict`, also across trees and within one append), racing appends (one winner per seq), concurrent
 * appends to many trees (each conflict fails only its own append), every kind of event read back as written, `tail`
 * (stored then live, gap-free under racing writers, from any cursor, of a missing tree), live-only deltas (delivered
 * to the tails that passed their step, never stored), `changes`, leases (`claim`, unconditional too, `heartbeat`,
 * `retire`, appends fenced by a lease: `LeaseLost`), `unfinished`, `listOpen`, snapshots (`Snapshots.save` / `load`: the latest
 * per tree, never moving backwards), the webhook outbox (entries written with their events, routing, claims in
 * order per endpoint and tree, retries, the delivery log, redelivery), and two stores over one database (`read`, `tail`, `changes`, races, resolutions,
 * leases, open callbacks and snapshots across them).
 *
 * The services are `@parley/log`'s own `SessionStore.Services` (`Store`): this package depends on `@parley/log`,
 * below the engine, so it restates nothing.
 *
 * @example
 * ```ts
 * import { SessionStore } from "@parley/log"
 * import * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
 * import { Effect } from "effect"
 *
 * SessionStoreSuite.suite(
 *   "SessionStore.layerMemory",
 *   Effect.map(SessionStore.makeMemory, (store) => ({ open: Effect.succeed(store) }))
 * )
 * ```
 *
 * @since 0.1.0
 */
import { describe } from "@effect/vitest"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Fixtures from "./internal/sessionStoreSuite/fixtures.js"
import { leases } from "./internal/sessionStoreSuite/leases.js"
import { live } from "./internal/sessionStoreSuite/live.js"
import { log } from "./internal/sessionStoreSuite/log.js"
import { outbox } from "./internal/sessionStoreSuite/outbox.js"
import { processes } from "./internal/sessionStoreSuite/processes.js"
import { secrets } from "./internal/sessionStoreSuite/secrets.js"
import { snapshots } from "./internal/sessionStoreSuite/snapshots.js"

/**
 * The services under test: `SessionStore.Services` of `@parley/log` (`eventLog`, `leases`, `snapshots`, `secrets`).
 *
 * @since 0.1.0
 * @category Models
 */
export type Store = Fixtures.Store

/**
 * A fresh database: `open` opens a store on it (each call another store, as another process would); `corrupt`, when
 * the store can hold such a row, overwrites the stored event `seq` of a tree with something that does not decode
 * (pass `{ canCorrupt: true }` to `suite` with it).
 *
 * @since 0.1.0
 * @category Models
 */
export type Database = Fixtures.Database

/**
 * Registers the store contract suite for one implementation. `makeDatabase` gives a fresh, empty database per
 * scenario (see the module docs).
 *
 * @since 0.1.0
 * @category Utils
 */
export const suite = (
  name: string,
  makeDatabase: Effect.Effect<Database, unknown, Scope.Scope>,
  options?: { readonly canCorrupt?: boolean | undefined }
) =>
  describe(`${name} (SessionStore contract)`, () => {
    log(makeDatabase, { canCorrupt: options?.canCorrupt ?? false })
    live(makeDatabase)
    leases(makeDatabase)
    processes(makeDatabase)
    snapshots(makeDatabase)
    secrets(makeDatabase)
    outbox(makeDatabase)
  })
