/**
 * What must hold of the stored trees once every process is done with them, whatever crashed on the way: each log read
 * through a `SessionStore` of the test process, folded with `TreeState.fold`, and the ledger of real tool executions.
 */
import type { TurnEvent } from "@parley/core"
import type { Ids } from "@parley/core"
import { TreeState } from "@parley/log"
import type { SessionStore } from "@parley/runtime"
import { Effect, HashMap, Option } from "effect"
import type { LedgerLine } from "../fixtures/agents.js"
import { idempotentTools } from "../fixtures/agents.js"
import { isFinished } from "../fixtures/trees.js"

export interface StoredTree {
  readonly treeId: string
  readonly header: TreeState.Header
  readonly events: ReadonlyArray<TurnEvent.TurnEvent>
}

export const readTree = (store: SessionStore.Services, treeId: string) =>
  Effect.gen(function*() {
    const header = yield* store.eventLog.getTree(treeId as Ids.SessionId)
    if (Option.isNone(header)) return yield* Effect.die(new Error(`there is no tree ${treeId}`))
    const events = yield* store.eventLog.read(treeId as Ids.SessionId, 0)
    return { treeId, header: header.value, events } satisfies StoredTree
  })

/** Nothing left to do (a tree whose first message never got written counts: it has nothing to do). */
export const isDone = (tree: StoredTree) =>
  tree.events.length === 0 || isFinished(TreeState.fold(tree.header, tree.events))

const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1)

const ofTag = <Tag extends TurnEvent.TurnEvent["_tag"]>(events: ReadonlyArray<TurnEvent.TurnEvent>, tag: Tag) =>
  events.filter((event): event is Extract<TurnEvent.TurnEvent, { _tag: Tag }> => event._tag === tag)

export interface Findings {
  readonly problems: ReadonlyArray<string>
  /** How the turns ended, by agent and final state (`pricer Completed`). */
  readonly finals: ReadonlyMap<string, number>
  readonly executions: number
  readonly reruns: number
}

/**
 * Checks every tree and the ledger:
 * - the log: `seq`s 0, 1, 2, … without gaps; `fold` gives `nextSeq` = its length;
 * - every turn queued ended exactly once, none is running or queued, no callback is open;
 * - every callback opened was resolved exactly once;
 * - every tool call the model made got exactly one result;
 * - a tool the runtime ran left a `ToolExecutionStarted` first; a tool that is not idempotent started at most once
 *   and ran at most once (the ledger); a successful result of a runtime tool comes from a run;
 * - no turn ended `Failed`.
 */
export const check = (trees: ReadonlyArray<StoredTree>, ledger: ReadonlyArray<LedgerLine>): Findings => {
  const problems: Array<string> = []
  const finals = new Map<string, number>()
  const runs = new Map<string, number>()
  for (const line of ledger) count(runs, line.toolCallId)
  const recorded = new Set<string>()
  let reruns = 0
  for (const tree of trees) {
    const { events, treeId } = tree
    const problem = (what: string) => problems.push(`${treeId}: ${what}`)
    events.forEach((event, i) => {
      if (event.seq !== i) problem(`event #${i} has seq ${event.seq}`)
    })
    const state = TreeState.fold(tree.header, events)
    if (state.nextSeq !== events.length) problem(`fold's nextSeq ${state.nextSeq} for ${events.length} events`)
    if (events.length > 0 && !isFinished(state)) {
      problem(`not finished: open ${state.open.join(",")}; last event ${events[events.length - 1]._tag}`)
    }
    for (const turn of HashMap.values(state.turns)) {
      if (turn.status !== "ended") problem(`turn ${turn.turnId} is ${turn.status}`)
    }
    const ended = new Map<string, number>()
    for (const event of ofTag(events, "TurnEnded")) {
      count(ended, event.turnId)
      const agent = TreeState.session(state, event.sessionId)?.agent.name ?? "?"
      count(finals, `${agent} ${event.state._tag}`)
      if (event.state._tag === "Failed") problem(`turn ${event.turnId} failed: ${event.state.error.message}`)
    }
    for (const event of ofTag(events, "TurnQueued")) {
      if (ended.get(event.turnId) !== 1) problem(`turn ${event.turnId} ended ${ended.get(event.turnId) ?? 0} times`)
    }
    const resolved = new Map<string, number>()
    for (const event of ofTag(events, "CallbackResolved")) count(resolved, event.callbackId)
    const opened = ofTag(events, "CallbackOpened").map((event): string => event.callback.id)
    if (new Set(opened).size !== opened.length) problem(`a callback opened twice`)
    for (const id of opened) {
      if (resolved.get(id) !== 1) problem(`callback ${id} resolved ${resolved.get(id) ?? 0} times`)
    }
    for (const id of resolved.keys()) if (!opened.includes(id)) problem(`callback ${id} resolved, never opened`)
    const completed = new Map<string, number>()
    for (const event of ofTag(events, "ToolCallCompleted")) count(completed, event.toolCallId)
    for (const event of ofTag(events, "ToolCallStarted")) {
      if (completed.get(event.toolCallId) !== 1) {
        problem(`tool call ${event.toolCallId} completed ${completed.get(event.toolCallId) ?? 0} times`)
      }
    }
    const started = new Map<string, number>()
    for (const event of ofTag(events, "ToolExecutionStarted")) {
      count(started, event.toolCallId)
      recorded.add(event.toolCallId)
    }
    for (const event of ofTag(events, "ToolCallCompleted")) {
      if (!started.has(event.toolCallId)) continue
      const ran = runs.get(event.toolCallId) ?? 0
      const idempotent = idempotentTools.has(event.toolId)
      if (ran > 1) reruns++
      if (!idempotent && (started.get(event.toolCallId) ?? 0) > 1) {
        problem(`${event.toolId} ${event.toolCallId} started ${started.get(event.toolCallId)} times`)
      }
      if (!idempotent && ran > 1) problem(`${event.toolId} ${event.toolCallId} ran ${ran} times`)
      if (!event.isFailure && ran === 0) problem(`${event.toolCallId} succeeded without running`)
    }
  }
  for (const id of runs.keys()) if (!recorded.has(id)) problems.push(`${id} ran without a ToolExecutionStarted`)
  return { problems, finals, executions: ledger.length, reruns }
}
