/**
 * The fault rounds of issue 16, shared by the fault tests (`Faults.test.ts`) and the crash test's rounds E and F:
 * owners run by `fixtures/crashProcess.ts` (no kill points: they run their trees and answer nothing), and this process
 * answering the approvals by id over the same store with an engine that runs no work (`Inbox`), as a person or a
 * service in another process would.
 *
 * - `ownerDown`: the owner is killed (`kill -9`) with approvals open; they are answered while no owner runs; a new
 *   owner starts and carries the approved calls out, each exactly once, with its real result.
 * - `paused`: the owner is paused (`SIGSTOP`) past its lease with approvals open; they are answered; a new owner takes
 *   the trees over and starts the approved calls (slow tools, still running when the old owner resumes); the old owner
 *   is resumed (`SIGCONT`) and never starts one.
 */
import { PgClient } from "@effect/sql-pg"
import { assert } from "@effect/vitest"
import type { Ids, TurnEvent } from "@parley/core"
import { Answer, Inbox, type Transport } from "@parley/core"
import { TreeState } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqliteClient } from "@parley/store-sql"
import type { Context, Scope } from "effect"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { LedgerLine } from "../fixtures/agents.js"
import { idempotentTools, readLedger } from "../fixtures/agents.js"
import { applicationNameOf, type StoreConfig } from "../fixtures/child.js"
import type { Args, Message, PlannedTree } from "../fixtures/crashProcess.js"
import type { Child } from "./children.js"
import { expect, spawn } from "./children.js"
import type { StoredTree } from "./invariants.js"
import { isDone, readTree } from "./invariants.js"

export interface Fixture {
  readonly config: StoreConfig
  readonly store: SessionStore.Services
  readonly ledger: string
}

/** An engine in this process that only answers (it runs no work), over the fixture's store. */
export const makeInbox = (store: SessionStore.Services) =>
  Layer.build(
    LocalTransport.layerWith({ owner: "test-inbox", runsWork: false }).pipe(
      Layer.provide([
        SessionStore.layer(store),
        Connectors.layerEmpty,
        RuntimeTools.layerEmpty,
        Models.layer(Models.byAgent({}))
      ])
    )
  )

export type InboxContext = Context.Context<Transport.Transport>

/** Answers every open callback (approvals: allow); how many it answered. */
export const answerOpen = (inbox: InboxContext) =>
  Effect.gen(function*() {
    let answered = 0
    for (const open of yield* Inbox.listOpen()) {
      yield* Inbox.answer(open, new Answer.AllowApproval()).pipe(
        Effect.tap(() => Effect.sync(() => answered++)),
        Effect.catchTags({ CallbackAlreadyAnswered: () => Effect.void, CallbackNotOpen: () => Effect.void })
      )
    }
    return answered
  }).pipe(Effect.provide(inbox))

/** Polls `condition` every 50 ms until it holds; fails with `what` after `millis`. */
export const waitFor = <E, R>(
  what: string | (() => string),
  millis: number,
  condition: Effect.Effect<boolean, E, R>
) =>
  Effect.gen(function*() {
    const deadline = Date.now() + millis
    while (!(yield* condition)) {
      if (Date.now() > deadline) {
        return assert.fail(`${typeof what === "string" ? what : what()}: not within ${millis} ms`)
      }
      yield* Effect.sleep("50 millis")
    }
  })

/** Starts an owner (`fixtures/crashProcess.ts`) on the trees; returns it once it started them all. */
export const startOwner = (
  fixture: Fixture,
  owner: string,
  trees: ReadonlyArray<PlannedTree>,
  treeIds: Map<string, string>
): Effect.Effect<Child<Message>, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const args: Args = {
      store: fixture.config,
      owner,
      leaseTtlMillis: 1_000,
      ledger: fixture.ledger,
      answers: false,
      trees: trees.map((tree) => ({ ...tree, treeId: tree.treeId ?? treeIds.get(tree.label) }))
    }
    const child = yield* spawn<Message>(owner, "crashProcess.ts", args)
    yield* expect(child, "Settled", {
      timeout: "45 seconds",
      onOther: (message) =>
        Effect.sync(() => {
          if (message._tag === "Started") treeIds.set(message.label, message.treeId)
        })
    })
    return child
  })

/** The stored trees. */
export const readTrees = (fixture: Fixture, treeIds: ReadonlyMap<string, string>) =>
  Effect.forEach([...treeIds.values()], (treeId) => readTree(fixture.store, treeId))

const allDone = (fixture: Fixture, treeIds: ReadonlyMap<string, string>) =>
  Effect.map(readTrees(fixture, treeIds), (trees) => trees.every(isDone))

/** Answers from this process until every tree is done. */
export const answerUntilDone = (
  fixture: Fixture,
  inbox: InboxContext,
  treeIds: ReadonlyMap<string, string>,
  owner: Child<Message>
) =>
  waitFor(
    () => `the trees finish (${owner.name}'s output:\n${owner.output()})`,
    45_000,
    Effect.andThen(answerOpen(inbox), allDone(fixture, treeIds))
  )

/** How many callbacks are open across the store. */
export const openCount = (inbox: InboxContext) =>
  Effect.map(Inbox.listOpen().pipe(Effect.provide(inbox)), (open) => open.length)

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

/** A tool call of the runtime that a person approved, and the processes that ran it (the ledger). */
export interface Approved {
  readonly toolCallId: string
  readonly toolId: string
  readonly idempotent: boolean
  readonly pids: ReadonlyArray<number>
  readonly starts: ReadonlyArray<string | undefined>
}

/** The tool calls of the program (`client.*`, run by the runtime here) allowed by an answered approval. */
export const approvedCalls = (
  trees: ReadonlyArray<StoredTree>,
  ledger: ReadonlyArray<LedgerLine>
): ReadonlyArray<Approved> =>
  trees.flatMap((tree) => {
    const state = TreeState.fold(tree.header, tree.events)
    const starts = ofTag(tree.events, "ToolExecutionStarted")
    return ofTag(tree.events, "CallbackResolved").flatMap((resolved) => {
      const callback = TreeState.callback(state, resolved.callbackId as Ids.CallbackId)?.callback
      if (callback?._tag !== "OpenApproval" || resolved.answer?._tag !== "AllowApproval") return []
      const { tool, toolCallId } = callback.request
      if (!tool.id.startsWith("client.")) return []
      return [{
        toolCallId,
        toolId: tool.id,
        idempotent: idempotentTools.has(tool.id),
        pids: ledger.filter((line) => line.toolCallId === toolCallId).map((line) => line.pid),
        starts: starts.filter((start) => start.toolCallId === toolCallId).map((start) => start.executor?.owner)
      }]
    })
  })

/** The final text of each root turn, by label. */
export const textsOf = (trees: ReadonlyArray<StoredTree>, treeIds: ReadonlyMap<string, string>) => {
  const texts = new Map<string, string>()
  for (const [label, treeId] of treeIds) {
    const tree = trees.find((stored) => stored.treeId === treeId)
    if (tree === undefined) continue
    const ended = ofTag(tree.events, "TurnEnded").filter((event) => event.sessionId === treeId)
    const last = ended[ended.length - 1]?.state
    texts.set(label, last?._tag === "Completed" ? last.text : `(${last?._tag ?? "not ended"})`)
  }
  return texts
}

export interface RoundResult {
  readonly trees: ReadonlyArray<StoredTree>
  readonly treeIds: ReadonlyMap<string, string>
  readonly approved: ReadonlyArray<Approved>
  /** The new owner's process id: every approved call ran there. */
  readonly executorPid: number
}

/**
 * The owner is killed with approvals open; they are answered while no owner runs; the next owner starts and carries
 * them out. `pricers` pricer trees (an approval, then `lookup_price`) and `shops` shop trees (approved spawns, then
 * each researcher's approved lookup).
 */
export const ownerDown = (fixture: Fixture, prefix: string, counts: { pricers: number; shops: number }) =>
  Effect.gen(function*() {
    const inbox = yield* makeInbox(fixture.store)
    const treeIds = new Map<string, string>()
    const trees: Array<PlannedTree> = [
      ...Array.from(
        { length: counts.pricers },
        (_, i) => ({ label: `${prefix}-pricer-${i}`, scenario: "pricer" as const })
      ),
      ...Array.from({ length: counts.shops }, (_, i) => ({ label: `${prefix}-shop-${i}`, scenario: "shop" as const }))
    ]
    const a = yield* startOwner(fixture, `${prefix}-owner-a`, trees, treeIds)
    // Every tree waits on its approvals (a pricer's lookup, a shop's two spawns).
    const expected = counts.pricers + 2 * counts.shops
    yield* waitFor("the approvals open", 30_000, Effect.map(openCount(inbox), (open) => open === expected))
    yield* a.kill
    // No owner runs: the approvals are answered by id, and the answers record the decisions alone.
    assert.strictEqual(yield* answerOpen(inbox), expected)
    for (const tree of yield* readTrees(fixture, treeIds)) {
      assert.deepStrictEqual(ofTag(tree.events, "ToolExecutionStarted"), [], `${tree.treeId}: no start recorded`)
      assert.deepStrictEqual(ofTag(tree.events, "SubagentStarted"), [], `${tree.treeId}: no spawn recorded`)
    }
    // The next owner takes the trees up and carries the approved calls out; this process answers the researchers'.
    const b = yield* startOwner(fixture, `${prefix}-owner-b`, trees, treeIds)
    yield* answerUntilDone(fixture, inbox, treeIds, b)
    yield* b.send({ _tag: "Stop" })
    const stored = yield* readTrees(fixture, treeIds)
    return {
      trees: stored,
      treeIds,
      approved: approvedCalls(stored, readLedger(fixture.ledger)),
      executorPid: b.pid
    } satisfies RoundResult
  })

/**
 * Whether the process `pid` holds no write transaction open on the store. Stopped inside one, a process blocks every
 * writer of the database until it continues (SQLite's write lock, PostgreSQL's row locks): a property of the database,
 * which no engine can break, tested in SqlStore.test.ts. The pause rounds stop an owner between its transactions.
 */
const outsideWrite = (config: StoreConfig, pid: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (config._tag === "sqlite") {
      yield* sql.unsafe("PRAGMA busy_timeout = 0")
      return yield* sql.unsafe("BEGIN IMMEDIATE").pipe(
        Effect.andThen(sql.unsafe("ROLLBACK")),
        Effect.as(true),
        Effect.catch(() => Effect.succeed(false))
      )
    }
    const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = ${applicationNameOf(pid)} AND state LIKE 'idle in transaction%'`
    return rows[0].n === 0
  }).pipe(Effect.provide(clientOf(config)), Effect.orDie)

/** A client of its own on the store's database. */
const clientOf = (config: StoreConfig): Layer.Layer<SqlClient.SqlClient, unknown> =>
  config._tag === "sqlite"
    ? SqliteClient.layer({ filename: config.filename })
    : PgClient.layer({ url: Redacted.make(config.url), maxConnections: 1 })

/** Stops the owner (`SIGSTOP`) at a moment it holds no write transaction open (see `outsideWrite`). */
const stopBetweenWrites = (config: StoreConfig, owner: Child<Message>) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 100; attempt++) {
      yield* owner.signal("SIGSTOP")
      // A statement in flight when it stopped finishes in the database first.
      yield* Effect.sleep("20 millis")
      if (yield* outsideWrite(config, owner.pid)) return
      yield* owner.signal("SIGCONT")
      yield* Effect.sleep(`${5 + attempt} millis`)
    }
    return assert.fail("the owner was inside a write transaction at every one of 100 stops")
  })

/**
 * The owner is paused past its lease with `payers` payer trees (an approval, then a slow `transfer`) and `pricers`
 * pricer trees waiting on their approvals; they are answered; a new owner takes the trees over and starts the calls;
 * while its transfers still run, the old owner is resumed: it must never start one.
 */
export const paused = (fixture: Fixture, prefix: string, counts: { payers: number; pricers: number }) =>
  Effect.gen(function*() {
    const inbox = yield* makeInbox(fixture.store)
    const treeIds = new Map<string, string>()
    const trees: Array<PlannedTree> = [
      ...Array.from(
        { length: counts.payers },
        (_, i) => ({ label: `${prefix}-payer-${i}`, scenario: "payer" as const })
      ),
      ...Array.from(
        { length: counts.pricers },
        (_, i) => ({ label: `${prefix}-pricer-${i}`, scenario: "pricer" as const })
      )
    ]
    const expected = counts.payers + counts.pricers
    const a = yield* startOwner(fixture, `${prefix}-owner-a`, trees, treeIds)
    yield* waitFor("the approvals open", 30_000, Effect.map(openCount(inbox), (open) => open === expected))
    // Paused past its lease (1 s): to the store it is dead; it still holds its trees in memory, with their leases.
    yield* stopBetweenWrites(fixture.config, a)
    yield* Effect.sleep("1500 millis")
    assert.strictEqual(yield* answerOpen(inbox), expected)
    const b = yield* startOwner(fixture, `${prefix}-owner-b`, trees, treeIds)
    // The new owner took every tree over and recorded the start of every approved call (the transfers still run: two
    // seconds after their side effect) when the old one resumes. (Resumed before that, the old owner would still be
    // the owner of a tree not yet taken over, and rightly run its call.)
    const startedByB = Effect.map(
      readTrees(fixture, treeIds),
      (stored) =>
        stored.every((tree) =>
          ofTag(tree.events, "ToolExecutionStarted").some((start) => start.executor?.owner === `${prefix}-owner-b`)
        )
    )
    yield* waitFor("the new owner starts every approved call", 20_000, startedByB)
      .pipe(Effect.catchDefect(() => Effect.void))
    yield* a.signal("SIGCONT")
    yield* answerUntilDone(fixture, inbox, treeIds, b)
    // Time for the old owner to do whatever it would: follow the changes, settle, start work.
    yield* Effect.sleep("1500 millis")
    yield* Effect.all([b.send({ _tag: "Stop" }), a.send({ _tag: "Stop" })])
    const stored = yield* readTrees(fixture, treeIds)
    const ledger = readLedger(fixture.ledger)
    assert.deepStrictEqual(
      ledger.filter((line) => line.pid === a.pid),
      [],
      `the old owner ran nothing after it resumed\n${a.output()}\n${
        stored.map((tree) =>
          tree.events.map((event) =>
            `${event.seq} ${event._tag}${
              event._tag === "ToolExecutionStarted" ? ` ${JSON.stringify(event.executor)}` : ""
            }`
          ).join("\n")
        ).join("\n---\n")
      }`
    )
    return { trees: stored, treeIds, approved: approvedCalls(stored, ledger), executorPid: b.pid } satisfies RoundResult
  })

/** Every approved call ran exactly once, in the new owner, which recorded its start; its real result reached the model. */
export const assertCarriedOut = (result: RoundResult, owner: string) => {
  assert.isAbove(result.approved.length, 0)
  for (const call of result.approved) {
    assert.deepStrictEqual(call.pids, [result.executorPid], `${call.toolId} ${call.toolCallId} ran once, in ${owner}`)
    assert.deepStrictEqual(call.starts, [owner], `${call.toolCallId} was started by ${owner} alone`)
  }
  for (const [label, text] of textsOf(result.trees, result.treeIds)) {
    if (label.includes("-pricer-")) assert.strictEqual(text, "The Atlas costs 1,200 EUR.", label)
    if (label.includes("-payer-")) assert.strictEqual(text, "Moved 42.", label)
    if (label.includes("-shop-")) assert.strictEqual(text, "The Atlas costs 1,200 EUR. The Nova costs 850 EUR.", label)
  }
}
