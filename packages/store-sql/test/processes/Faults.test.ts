import { assert, describe, it } from "@effect/vitest"
import { SqlStore } from "@parley/store-sql"
import type { Scope } from "effect"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "../databases.js"
import { readLedger } from "../fixtures/agents.js"
import type { StoreConfig } from "../fixtures/child.js"
import type { PlannedTree } from "../fixtures/crashProcess.js"
import type { Fixture } from "./faults.js"
import { assertCarriedOut, ownerDown, paused, readTrees, startOwner, textsOf, waitFor } from "./faults.js"
import { check, isDone } from "./invariants.js"

// Issue 16: tool runs under faults. Owners are child processes (fixtures/crashProcess.ts); this process answers by id
// over the same store with an engine that runs no work, as another process would.
//   (a) the owner is killed with approvals open, they are answered while no owner runs: the next owner runs each
//       approved call exactly once and its real result reaches the model;
//   (b) the owner is paused (SIGSTOP) past its lease, the approvals are answered, a new owner takes over and runs the
//       calls; the old owner resumes (SIGCONT) while they run: it never starts one;
//   (c) a turn killed during its model steps more times than its maxSteps completes.

const fixture = (config: StoreConfig, open: typeof openStore) =>
  Effect.gen(function*() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "parley-faults-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true })))
    return { config, store: yield* open(config), ledger: path.join(directory, "ledger.jsonl") } satisfies Fixture
  })

const openStore = (config: StoreConfig) =>
  storeOf(
    config._tag === "sqlite" ? SqlStore.layerSqlite({ filename: config.filename }) : SqlStore.layerPg({
      url: config.url,
      maxConnections: 4
    })
  )

const stores: Record<string, Effect.Effect<StoreConfig, unknown, Scope.Scope>> = {
  "a SQLite file": Effect.map(sqliteFile, (filename): StoreConfig => ({ _tag: "sqlite", filename })),
  PostgreSQL: Effect.map(pgSchema, (url): StoreConfig => ({ _tag: "pg", url }))
}

/** (c): killed in its first model step three times (maxSteps is 2), then left to finish. */
const crashesInSteps = (fixture: Fixture) =>
  Effect.gen(function*() {
    const treeIds = new Map<string, string>()
    const tree: PlannedTree = { label: "stepper", scenario: "stepper" }
    for (let crash = 0; crash < 3; crash++) {
      const child = yield* startOwner(
        fixture,
        "stepper-engine",
        [{ ...tree, killPoint: { _tag: "model", call: 1 } }],
        treeIds
      )
      yield* child.kill
    }
    const last = yield* startOwner(fixture, "stepper-engine", [tree], treeIds)
    yield* waitFor(
      "the stepper finishes",
      30_000,
      Effect.map(readTrees(fixture, treeIds), (trees) => trees.every(isDone))
    )
    yield* last.send({ _tag: "Stop" })
    const trees = yield* readTrees(fixture, treeIds)
    const aborted = trees[0].events.filter((event) => event._tag === "MessageAborted").length
    assert.isAtLeast(aborted, 3, "each crash aborted the step in flight")
    assert.deepStrictEqual(check(trees, readLedger(fixture.ledger)).problems, [])
    assert.strictEqual(textsOf(trees, treeIds).get("stepper"), "Charged and fetched.")
  })

describe("Faults: an approved call always runs once, a deposed owner never runs one", { concurrent: false }, () => {
  for (const [name, config] of Object.entries(stores)) {
    it.live(
      `(a) owner down, answered by id: the next owner runs each approved call once (${name})`,
      () =>
        Effect.gen(function*() {
          const faults = yield* fixture(yield* config, openStore)
          const result = yield* ownerDown(faults, "down", { pricers: 3, shops: 1 })
          assert.deepStrictEqual(check(result.trees, readLedger(faults.ledger)).problems, [])
          assertCarriedOut(result, "down-owner-b")
        }),
      { timeout: 120_000 }
    )

    it.live(
      `(b) owner paused past its lease: the new owner runs the calls, the old one never starts one (${name})`,
      () =>
        Effect.gen(function*() {
          const faults = yield* fixture(yield* config, openStore)
          const result = yield* paused(faults, "pause", { payers: 2, pricers: 1 })
          assert.deepStrictEqual(check(result.trees, readLedger(faults.ledger)).problems, [])
          assertCarriedOut(result, "pause-owner-b")
        }),
      { timeout: 120_000 }
    )

    it.live(
      `(c) a turn killed in its model steps more times than maxSteps completes (${name})`,
      () => Effect.flatMap(Effect.flatMap(config, (c) => fixture(c, openStore)), crashesInSteps),
      { timeout: 120_000 }
    )
  }
})
