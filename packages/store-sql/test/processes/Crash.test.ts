import { assert, describe, it } from "@effect/vitest"
import { Answer, Inbox } from "@parley/core"
import { TreeState } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { Effect, Layer, Queue } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pgSchema, sqliteFile, storeOf } from "../databases.js"
import { readLedger, type Scenario, scenarios } from "../fixtures/agents.js"
import type { StoreConfig } from "../fixtures/child.js"
import type { Args, KillPoint, Message, PlannedTree } from "../fixtures/crashProcess.js"
import { ChildFailed, expect, spawn } from "./children.js"
import { approvedCalls, assertCarriedOut, ownerDown, paused } from "./faults.js"
import type { StoredTree } from "./invariants.js"
import { check, isDone, readTree } from "./invariants.js"

// Issue 9: the engine survives `kill -9`. A child process (fixtures/crashProcess.ts) runs the scenarios' trees on a
// SQLite file (then on PostgreSQL) under the owner name "crash-engine"; each tree stops at a kill point of its own (before or after its
// n-th append, in a running tool, in a model call), and once all have, the test kills the process. Round after round:
//   A. new trees, each with a kill point: every append of every scenario, before and after (leases of 1 s);
//   B. the same owner restarts: it takes its trees back at once and each stops again at its first or second append
//      (a crash during recovery); new trees run with no kill point and are killed wherever they are;
//   C. the same owner again, with 30 new trees and no kill point: killed at an arbitrary moment, in the thick of their
//      appends (mid-transaction, mid-tool, mid-step: wherever they are);
//   D. an engine under another name follows the trees while C's leases hold, takes them over once they lapse and
//      runs them to the end, while the test process answers the approvals over the same store (Inbox.listOpen /
//      Inbox.answer, runsWork: false);
//   E. (issue 16) an owner is killed with approvals open; the test process answers them while no owner runs; the next
//      owner carries each approved call out exactly once, with its real result (processes/faults.ts);
//   F. (issue 16) an owner is paused (SIGSTOP) past its lease with approvals open; they are answered; a new owner takes
//      over and starts the calls; the old owner resumes (SIGCONT) while they run and never starts one.
// Then: every turn ended, no callback was lost, no tool that is not idempotent ran twice (the ledger), every log folds
// to a finished tree, and every approved call of a tool that is not idempotent ran exactly once — but for those killed
// on purpose between their recorded start and their side effect (reported to the model as interrupted).

/** How many appends each scenario makes (a little more: a tree that finishes before its kill point counts none). */
const appendsOf: Record<typeof scenarios[number], number> = {
  pricer: 6,
  batch: 6,
  slow: 5,
  shop: 22,
  canceller: 4,
  echo: 5
}
/** How many model calls each scenario makes, for the kill points in a model call. */
const modelCallsOf: Record<typeof scenarios[number], number> = {
  pricer: 2,
  batch: 2,
  slow: 2,
  shop: 7,
  canceller: 1,
  echo: 2
}

const describeKillPoint = (killPoint: KillPoint, tags: ReadonlyArray<string>) => {
  switch (killPoint._tag) {
    case "before":
    case "after":
      return `${killPoint._tag} ${tags.join("+")}`
    case "tool":
      return "in a running tool"
    case "model":
      return "in a model call"
  }
}

/** What else held at the kill point, from the tree's log as the killed process left it. */
const situation = (tree: StoredTree): ReadonlyArray<string> => {
  if (tree.events.length === 0) return ["nothing stored"]
  const state = TreeState.fold(tree.header, tree.events)
  const running = TreeState.runningTurns(state)
  return [
    ...(state.open.length > 0 ? ["a callback open"] : []),
    ...(running.some((turn) => turn.calls.some((call) => call.stage._tag === "Executing")) ? ["a tool executing"] : []),
    ...(running.some((turn) => turn.modelPending) ? ["a model step in flight"] : []),
    ...(running.some((turn) => turn.sessionId !== state.treeId) ? ["a subagent mid-turn"] : []),
    ...(tree.events.some((event) => event._tag === "CancelRequested") ? ["a cancel requested"] : []),
    ...(running.length === 0 ? ["no turn running"] : [])
  ]
}

interface Round {
  readonly name: string
  readonly owner: string
  readonly leaseTtlMillis: number
  readonly answers: boolean
  readonly trees: ReadonlyArray<PlannedTree>
}

/** The rounds on a store (the children's `config`; `store` is this process's view of it). */
const crash = (config: StoreConfig, store: SessionStore.Services) =>
  Effect.gen(function*() {
    const started = Date.now()
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "parley-crash-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true })))
    const ledger = path.join(directory, "ledger.jsonl")
    const treesOf = new Map<string, { readonly treeId: string; readonly scenario: Scenario }>()
    const killPoints = new Map<string, number>()
    const situations = new Map<string, number>()
    let total = 0
    const timings: Array<string> = []

    const argsOf = (round: Round): Args => ({
      store: config,
      owner: round.owner,
      leaseTtlMillis: round.leaseTtlMillis,
      ledger,
      answers: round.answers,
      trees: round.trees
    })

    /** Starts a round's child; collects its messages until every tree with a kill point stopped there or finished. */
    const startRound = (round: Round) =>
      Effect.gen(function*() {
        const child = yield* spawn<Message>(`round ${round.name}`, "crashProcess.ts", argsOf(round))
        const stops: Array<Extract<Message, { _tag: "Stopped" }>> = []
        yield* expect(child, "Settled", {
          timeout: "90 seconds",
          onOther: (message) => {
            switch (message._tag) {
              case "Started":
                return Effect.sync(() => {
                  const tree = round.trees.find((planned) => planned.label === message.label)
                  treesOf.set(message.label, { treeId: message.treeId, scenario: tree?.scenario ?? "echo" })
                })
              case "Stopped":
                return Effect.sync(() => void stops.push(message))
              case "Stuck":
                return new ChildFailed({
                  message: `stuck trees: ${JSON.stringify(message.trees)}\n${child.output()}`
                })
              case "Warning":
                return Effect.sync(() => console.log(`${child.name}: ${message.message}`))
              default:
                return Effect.void
            }
          }
        })
        return { child, stops }
      })

    /** Records the kill points a killed round exercised. */
    const record = (
      stops: ReadonlyArray<Extract<Message, { _tag: "Stopped" }>>,
      uncontrolled: ReadonlyArray<string>
    ) =>
      Effect.gen(function*() {
        for (const stop of stops) {
          const scenario = treesOf.get(stop.label)?.scenario
          const tree = yield* readTree(store, stop.treeId)
          count(killPoints, `${scenario}: ${describeKillPoint(stop.killPoint, stop.tags)}`)
          for (const what of situation(tree)) count(situations, what)
          if (stop.tags.includes("CancelRequested")) count(situations, "a cancel's append (before or after it)")
          total++
        }
        for (const label of uncontrolled) {
          const known = treesOf.get(label)
          if (known === undefined) continue
          const tree = yield* readTree(store, known.treeId)
          if (isDone(tree)) continue
          count(killPoints, `${known.scenario}: uncontrolled, after ${tree.events[tree.events.length - 1]?._tag}`)
          for (const what of situation(tree)) count(situations, what)
          total++
        }
      })

    const unfinished = Effect.gen(function*() {
      const open: Array<PlannedTree> = []
      for (const [label, { scenario, treeId }] of treesOf) {
        if (!isDone(yield* readTree(store, treeId))) open.push({ label, scenario, treeId })
      }
      return open
    })

    // ----- A: a kill point at every append (before and after), in the running tools, in each model call -----
    const planA: Array<PlannedTree> = []
    for (const scenario of scenarios) {
      for (let n = 1; n <= appendsOf[scenario]; n++) {
        planA.push({ label: `a-${scenario}-before-${n}`, scenario, killPoint: { _tag: "before", append: n } })
        planA.push({ label: `a-${scenario}-after-${n}`, scenario, killPoint: { _tag: "after", append: n } })
      }
      for (let n = 1; n <= modelCallsOf[scenario]; n++) {
        planA.push({ label: `a-${scenario}-model-${n}`, scenario, killPoint: { _tag: "model", call: n } })
      }
    }
    planA.push({ label: "a-slow-tool", scenario: "slow", killPoint: { _tag: "tool" } })
    planA.push({ label: "a-canceller-tool", scenario: "canceller", killPoint: { _tag: "tool" } })
    const { child: a, stops: stopsA } = yield* startRound({
      name: "A",
      owner: "crash-engine",
      leaseTtlMillis: 1_000,
      answers: true,
      trees: planA
    })
    yield* a.kill
    assert.strictEqual((yield* a.exit).signal, "SIGKILL")
    yield* record(stopsA, [])
    timings.push(`A ${stopsA.length} kill points, ${Date.now() - started} ms`)

    // ----- B: the same owner takes its trees back; each stops at its first or second append again -----
    const recovered = yield* unfinished
    const fresh: Array<PlannedTree> = scenarios.flatMap((scenario) =>
      [1, 2].map((i) => ({ label: `b-${scenario}-${i}`, scenario }))
    )
    const planB = [
      ...recovered.map((tree, i): PlannedTree => ({
        ...tree,
        killPoint: { _tag: i % 4 < 2 ? "before" : "after", append: i % 2 === 0 ? 1 : 2 }
      })),
      ...fresh
    ]
    const { child: b, stops: stopsB } = yield* startRound({
      name: "B",
      owner: "crash-engine",
      leaseTtlMillis: 1_000,
      answers: true,
      trees: planB
    })
    // The new trees run a little longer before the kill comes, wherever they are.
    yield* Effect.sleep("150 millis")
    yield* b.kill
    assert.strictEqual((yield* b.exit).signal, "SIGKILL")
    yield* record(stopsB, fresh.map((tree) => tree.label))
    timings.push(`B ${stopsB.length} kill points in recovery, ${Date.now() - started} ms`)

    // ----- C: new trees killed at an arbitrary moment, once they have written some of their events -----
    const busy: Array<PlannedTree> = scenarios.flatMap((scenario) =>
      [1, 2, 3, 4, 5].map((i) => ({ label: `c-${scenario}-${i}`, scenario }))
    )
    // Its leases hold 3 s: the next engine finds them alive, follows the trees it is asked about, then takes them over.
    const { child: c } = yield* startRound({
      name: "C",
      owner: "crash-engine",
      leaseTtlMillis: 3_000,
      answers: true,
      trees: [...(yield* unfinished), ...busy]
    })
    const written = Effect.map(
      Effect.forEach(busy, (tree) => readTree(store, treesOf.get(tree.label)?.treeId ?? "")),
      (trees) => trees.reduce((sum, tree) => sum + tree.events.length, 0)
    )
    const enough = Date.now() + 30_000
    while ((yield* written) < 220) {
      if (Date.now() > enough) assert.fail(`round C: the new trees did not write 220 events in 30 s\n${c.output()}`)
      yield* Effect.sleep("10 millis")
    }
    yield* c.kill
    assert.strictEqual((yield* c.exit).signal, "SIGKILL")
    const before = total
    yield* record([], busy.map((tree) => tree.label))
    timings.push(`C ${total - before} kill points at an arbitrary moment, ${Date.now() - started} ms`)

    // ----- D: another owner takes the trees over once C's leases lapse; this process answers the approvals -----
    const left = yield* unfinished
    const { child: d } = yield* startRound({
      name: "D",
      owner: "crash-engine-2",
      leaseTtlMillis: 1_000,
      answers: false,
      trees: left
    })
    const inbox = yield* Layer.build(
      LocalTransport.layerWith({ owner: "test-inbox", runsWork: false }).pipe(
        Layer.provide([
          SessionStore.layer(store),
          Connectors.layerEmpty,
          RuntimeTools.layerEmpty,
          Models.layer(Models.byAgent({}))
        ])
      )
    )
    let answered = 0
    const deadline = Date.now() + 60_000
    while (true) {
      const open = yield* Inbox.listOpen().pipe(Effect.provide(inbox))
      for (const callback of open) {
        yield* Inbox.answer(callback, new Answer.AllowApproval()).pipe(
          Effect.provide(inbox),
          Effect.catchTag("CallbackAlreadyAnswered", () => Effect.void)
        )
        answered++
      }
      if ((yield* unfinished).length === 0) break
      let failed = false
      for (const message of yield* Queue.clear(d.messages)) {
        if (message._tag === "Warning") console.log(`${d.name}: ${message.message}`)
        if (message._tag === "Failed") failed = true
      }
      if (failed || Date.now() > deadline) {
        const stuck = yield* unfinished
        assert.fail(`trees left unfinished: ${stuck.map((tree) => tree.label).join(", ")}\n${d.output()}`)
      }
      yield* Effect.sleep("100 millis")
    }
    yield* d.send({ _tag: "Stop" })
    assert.strictEqual((yield* d.exit).code, 0, d.output())
    timings.push(`D answered ${answered} approvals from the test process, ${Date.now() - started} ms`)

    // ----- E: an owner is killed with approvals open, answered while no owner runs; the next owner carries them out -----
    const fixture = { config, store, ledger }
    const down = yield* ownerDown(fixture, "e", { pricers: 6, shops: 2 })
    assertCarriedOut(down, "e-owner-b")
    timings.push(`E answered ${down.approved.length} approved calls while no owner ran, ${Date.now() - started} ms`)

    // ----- F: an owner is paused past its lease with approvals open; a new owner runs them; the old one resumes -----
    const pause = yield* paused(fixture, "f", { payers: 3, pricers: 3 })
    assertCarriedOut(pause, "f-owner-b")
    timings.push(
      `F paused the owner past its lease, ${pause.approved.length} approved calls, ${Date.now() - started} ms`
    )

    // ----- What must hold -----
    const trees = [
      ...yield* Effect.forEach([...treesOf.values()], ({ treeId }) => readTree(store, treeId)),
      ...down.trees,
      ...pause.trees
    ]
    const findings = check(trees, readLedger(ledger))
    // Every approved call of a tool that is not idempotent ran exactly once — but for those whose owner was killed
    // between the start it recorded and the side effect (the kill points after that append): never run, the model told
    // they were interrupted.
    const approved = approvedCalls(trees, readLedger(ledger)).filter((call) => !call.idempotent)
    const once = approved.filter((call) => call.pids.length === 1)
    const killedInWindow = approved.filter((call) => call.pids.length === 0 && call.starts.length > 0)
    assert.deepStrictEqual(
      approved.filter((call) => !once.includes(call) && !killedInWindow.includes(call)),
      [],
      "approved calls that ran neither once nor were killed after their start"
    )
    const summary =
      `crash test (${config._tag}): ${total} kill points (${killPoints.size} kinds) in ${trees.length} trees; ` +
      `${findings.executions} tool executions, ${findings.reruns} idempotent re-runs`
    console.log(
      [
        summary,
        `  approved calls of tools that are not idempotent: ${approved.length}; ran exactly once: ${once.length}; ` +
        `killed between their recorded start and their side effect (interrupted, never run): ${killedInWindow.length}`,
        ...timings.map((line) => `  round ${line}`),
        "  kill points:",
        ...[...killPoints].sort().map(([kind, n]) => `    ${n} × ${kind}`),
        "  what held at them:",
        ...[...situations].sort().map(([what, n]) => `    ${n} × ${what}`),
        "  turns ended:",
        ...[...findings.finals].sort().map(([final, n]) => `    ${n} × ${final}`)
      ].join("\n")
    )
    assert.deepStrictEqual(findings.problems, [])
    assert.isAtLeast(total, 120, "kill points exercised")
    assert.isAtLeast(situations.get("a callback open") ?? 0, 10)
    assert.isAtLeast(situations.get("a tool executing") ?? 0, 10)
    assert.isAtLeast(situations.get("a model step in flight") ?? 0, 10)
    assert.isAtLeast(situations.get("a subagent mid-turn") ?? 0, 10)
    assert.isAtLeast(situations.get("a cancel's append (before or after it)") ?? 0, 2)
  })

describe("Crash: kill -9 at every append, in tools and model calls, and during recovery", { concurrent: false }, () => {
  it.live(
    "on a SQLite file, every turn completes: no callback lost, no tool run twice, every log folds",
    () =>
      Effect.gen(function*() {
        const filename = yield* sqliteFile
        yield* crash({ _tag: "sqlite", filename }, yield* storeOf(SqlStore.layerSqlite({ filename })))
      }),
    { timeout: 300_000 }
  )

  it.live("on PostgreSQL, the same", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      yield* crash({ _tag: "pg", url }, yield* storeOf(SqlStore.layerPg({ url, maxConnections: 4 })))
    }), { timeout: 300_000 })
})

const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
