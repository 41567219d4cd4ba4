/**
 * The contract of the event log's row-level driver (`EventLog.Driver` of `@parley/log`), on its own: what a driver
 * must do with the rows `EventLog.make` hands it, with no event logic of its own. `SessionStoreSuite` checks the whole
 * store through the services; this suite checks the seam below them, so a new driver is held to it directly.
 *
 * Import it as `@parley/testing/EventLogDriverSuite`: it registers `@effect/vitest` tests, so it loads vitest, and the
 * `@parley/testing` index leaves it out.
 *
 * Covered: a tree's header (a second `createTree` keeps the first), an append's rows written all or none at the
 * expected length (`SeqConflict` with the length it has, nothing written), `nextSeq`, `read` and `readRecent` giving
 * the same events, the sessions the rows name filed to the tree (`treeOf`), the callbacks opened and resolved in
 * `listOpen`, one resolution per callback across appends and within one (`ResolutionConflict`, nothing written), the
 * fence checked in the same write (`LeaseLost` for a lease the tree does not have), and an append to a tree the
 * driver does not have (`StoreError`).
 *
 * @example
 * ```ts
 * import { SessionStore } from "@parley/log"
 * import * as EventLogDriverSuite from "@parley/testing/EventLogDriverSuite"
 * import { Effect } from "effect"
 *
 * EventLogDriverSuite.suite("memory driver", Effect.map(SessionStore.makeMemoryDriver, (memory) => memory.driver))
 * ```
 *
 * @since 0.1.0
 */
import { assert, describe, it } from "@effect/vitest"
import * as AgentSpec from "@parley/core/AgentSpec"
import type * as TurnEvent from "@parley/core/TurnEvent"
import * as EventLog from "@parley/log/EventLog"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import {
  at,
  callbackId,
  childId,
  ended,
  later,
  opened,
  otherTreeId,
  queued,
  resolved,
  seqs,
  tree,
  treeId
} from "./internal/sessionStoreSuite/fixtures.js"

/**
 * A fresh, empty driver (a new SQLite file, a fresh PostgreSQL schema, a new memory driver, …), in a scope.
 *
 * @since 0.1.0
 * @category Models
 */
export type MakeDriver = Effect.Effect<EventLog.Driver, unknown, Scope.Scope>

const rows = (expectedSeq: number, events: ReadonlyArray<TurnEvent.TurnEvent>, fence?: EventLog.AppendRows["fence"]) =>
  EventLog.rowsOf(treeId, expectedSeq, events, fence, "sync")

/** A fresh driver with the tree `treeId` created. */
const withDriver = <A, E>(
  makeDriver: MakeDriver,
  body: (driver: EventLog.Driver) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.gen(function*() {
    const driver = yield* makeDriver
    yield* driver.createTree(tree())
    return yield* body(driver)
  })

/**
 * Registers the driver contract suite for one driver. `makeDriver` gives a fresh, empty one per scenario.
 *
 * @since 0.1.0
 * @category Utils
 */
export const suite = (name: string, makeDriver: MakeDriver) =>
  describe(`${name} (EventLog.Driver contract)`, () => {
    it.effect("keeps a tree's header, the first one only; has no tree it was not given", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          yield* driver.createTree({ treeId, agent: AgentSpec.make({ name: "impostor" }), createdAt: at })
          const header = yield* driver.getTree(treeId)
          assert.strictEqual(Option.getOrUndefined(Option.map(header, (stored) => stored.agent.name)), "assistant")
          assert.deepStrictEqual(yield* driver.nextSeq(treeId), Option.some(0))
          assert.deepStrictEqual(yield* driver.getTree(otherTreeId), Option.none())
          assert.deepStrictEqual(yield* driver.nextSeq(otherTreeId), Option.none())
          assert.deepStrictEqual(yield* driver.treeOf(treeId), Option.some(treeId))
        })))

    it.effect("writes an append's rows all or none at the expected length", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          yield* driver.append(rows(0, [queued(0), queued(1)]))
          assert.deepStrictEqual(yield* driver.nextSeq(treeId), Option.some(2))
          const conflict = yield* Effect.flip(driver.append(rows(1, [queued(1)])))
          assert.strictEqual(conflict._tag, "SeqConflict")
          if (conflict._tag === "SeqConflict") assert.deepStrictEqual([conflict.expected, conflict.actual], [1, 2])
          yield* driver.append(rows(2, [ended(2)]))
          assert.deepStrictEqual(seqs(yield* driver.read(treeId, 0)), [0, 1, 2])
          assert.deepStrictEqual(yield* driver.read(treeId, 1), yield* driver.readRecent(treeId, 1))
          assert.deepStrictEqual(yield* driver.read(treeId, 0), [queued(0), queued(1), ended(2)])
        })))

    it.effect("files the sessions an append names to its tree", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* driver.treeOf(childId), Option.none())
          yield* driver.append(rows(0, [queued(0), queued(1, childId)]))
          assert.deepStrictEqual(yield* driver.treeOf(childId), Option.some(treeId))
        })))

    it.effect("lists the callbacks opened and not resolved; resolves each at most once, writing nothing else", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          yield* driver.append(rows(0, [queued(0), opened(1, callbackId("a")), opened(2, callbackId("b"))]))
          const open = (yield* driver.listOpen()).map((row) => [row.callbackId, row.seq, row.kind])
          assert.deepStrictEqual(open, [[callbackId("a"), 1, "approval"], [callbackId("b"), 2, "approval"]])
          yield* driver.append(rows(3, [resolved(3, callbackId("a"))]))
          assert.deepStrictEqual((yield* driver.listOpen()).map((row) => row.callbackId), [callbackId("b")])
          const again = yield* Effect.flip(driver.append(rows(4, [resolved(4, callbackId("a")), queued(5)])))
          assert.strictEqual(again._tag, "ResolutionConflict")
          const twice = yield* Effect.flip(
            driver.append(rows(4, [resolved(4, callbackId("b")), resolved(5, callbackId("b"))]))
          )
          assert.strictEqual(twice._tag, "ResolutionConflict")
          assert.deepStrictEqual(yield* driver.nextSeq(treeId), Option.some(4))
          assert.deepStrictEqual((yield* driver.listOpen()).map((row) => row.callbackId), [callbackId("b")])
          assert.deepStrictEqual(
            (yield* driver.listOpen({ sessionId: otherTreeId })).map((row) => row.callbackId),
            []
          )
        })))

    it.effect("lists the callbacks due by a time (`expiresBy`): open, with a deadline at or before it", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          yield* driver.append(
            rows(0, [queued(0), opened(1, callbackId("a")), opened(2, callbackId("b"), treeId, undefined)])
          )
          const dueBy = (millis: number) =>
            Effect.map(driver.listOpen({ expiresBy: millis }), (open) => open.map((row) => row.callbackId))
          assert.deepStrictEqual(yield* dueBy(DateTime.toEpochMillis(later) - 1), [])
          assert.deepStrictEqual(yield* dueBy(DateTime.toEpochMillis(later)), [callbackId("a")])
          yield* driver.append(rows(3, [resolved(3, callbackId("a"))]))
          assert.deepStrictEqual(yield* dueBy(DateTime.toEpochMillis(later) + 1), [])
        })))

    it.effect("checks the fence in the same write: a lease the tree does not have writes nothing", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          const lost = yield* Effect.flip(driver.append(rows(0, [queued(0)], { owner: "engine-x", epoch: 7 })))
          assert.strictEqual(lost._tag, "LeaseLost")
          assert.deepStrictEqual(yield* driver.read(treeId, 0), [])
        })))

    it.effect("fails an append to a tree it does not have with a StoreError", () =>
      withDriver(makeDriver, (driver) =>
        Effect.gen(function*() {
          const missing = yield* Effect.flip(
            driver.append(EventLog.rowsOf(otherTreeId, 0, [queued(0, otherTreeId)], undefined, "sync"))
          )
          assert.strictEqual(missing._tag, "StoreError")
          assert.deepStrictEqual(yield* driver.nextSeq(otherTreeId), Option.none())
        })))
  })
