/**
 * How a scenario gets its runtime: `withModel(model, body, options?)` builds the scripted model, asks the transport
 * under test for a fresh runtime on it (running the scenario's runtime tools, if any) and runs `body` there.
 *
 * After every scenario that succeeds, the oracle checks the projection: for each tree the scenario created, the
 * transport's log folded with `TreeState.fold` must agree with what the transport reports of every turn in it (open
 * callbacks, state, cursors) and of every session (its parent). It also checks snapshots of the projection: the fold
 * encoded and decoded (`SnapshotCodec.encode` / `decode`) is the same state, and so is the fold of the
 * log's rest from the snapshot of a prefix, at a few points of the log.
 */
import { assert } from "@effect/vitest"
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { SessionId } from "@parley/core/Ids"
import * as Transport from "@parley/core/Transport"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as SnapshotCodec from "@parley/log/SnapshotCodec"
import * as TreeState from "@parley/log/TreeState"
import type * as Tool from "@parley/tools/Tool"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type * as ScriptedModel from "../../ScriptedModel.js"

/** What a scenario asks of its runtime beyond the model (see `TransportSuite.RuntimeOptions`). */
export interface RuntimeOptions {
  /** The tools the runtime runs itself (`RuntimeTools.layer(...runtimeTools)` of `@parley/runtime`). */
  readonly runtimeTools: ReadonlyArray<Tool.Any>
}

/** What `TransportSuite.suite` gets: a fresh runtime whose agents all run on `model`. */
export type MakeTransport = (
  model: LanguageModel.LanguageModel,
  options: RuntimeOptions
) => Layer.Layer<Transport.Transport>

/**
 * Runs a scenario on a fresh runtime whose agents run on `model` (the handle is passed on for its `calls`), and which
 * runs `options.runtimeTools` itself (none unless given).
 */
export type WithModel = <A, E>(
  model: Effect.Effect<ScriptedModel.Service>,
  body: (model: ScriptedModel.Service) => Effect.Effect<A, E, Transport.Transport>,
  options?: Partial<RuntimeOptions>
) => Effect.Effect<A, E>

interface Created {
  readonly info: Transport.SessionInfo
  readonly agent: AgentSpec
}

/** The stored events of a tree with `seq < end`. */
const logUntil = (transport: Transport.Service, treeId: SessionId, end: number) =>
  end === 0 ? Effect.succeed<ReadonlyArray<TurnEvent>>([]) : transport.events(treeId, 0).pipe(
    Stream.filter((event) => event._tag !== "MessageDelta"),
    Stream.takeUntil((event) => event.seq >= end - 1),
    Stream.runCollect
  )

const ids = (callbacks: ReadonlyArray<{ readonly id: string }>) => callbacks.map((callback) => callback.id)

/** A state with its `HashMap`s as entry arrays sorted by key, to compare with `deepStrictEqual`. */
const plain = (state: TreeState.TreeState) => {
  const entries = <K extends string, V>(map: HashMap.HashMap<K, V>) =>
    Array.from(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return {
    ...state,
    sessions: entries(state.sessions).map(([id, session]) => [id, { ...session, requests: entries(session.requests) }]),
    turns: entries(state.turns),
    callbacks: entries(state.callbacks)
  }
}

const roundTrip = (state: TreeState.TreeState, where: string): TreeState.TreeState => {
  const json = SnapshotCodec.encode(state)
  if (Result.isFailure(json)) return assert.fail(`${where}: the state does not encode: ${json.failure.message}`)
  const decoded = SnapshotCodec.decode(json.success)
  if (Result.isFailure(decoded)) {
    return assert.fail(`${where}: the snapshot does not decode: ${decoded.failure.message}`)
  }
  return decoded.success
}

/**
 * Snapshots of the projection: `decode(encode(fold(log)))` is `fold(log)`, and `foldFrom(decode(encode(fold(prefix))),
 * rest)` is `fold(prefix ++ rest)`, for a few prefixes.
 */
const checkSnapshots = (header: TreeState.Header, events: ReadonlyArray<TurnEvent>, state: TreeState.TreeState) => {
  const expected = plain(state)
  assert.deepStrictEqual(plain(roundTrip(state, "snapshot of the whole log")), expected, "snapshot of the whole log")
  const splits = new Set([0, 1, Math.floor(events.length / 3), Math.floor((2 * events.length) / 3), events.length - 1])
  for (const split of splits) {
    if (split < 0 || split > events.length) continue
    const where = `snapshot at seq ${split} of ${events.length}`
    const prefix = roundTrip(TreeState.fold(header, events.slice(0, split)), where)
    assert.deepStrictEqual(plain(TreeState.foldFrom(prefix, events.slice(split))), expected, where)
  }
}

/** Checks one tree: the fold of its log against the transport's answers, taken at the same log position. */
const checkTree = (transport: Transport.Service, created: Created) =>
  Effect.gen(function*() {
    const treeId = created.info.sessionId
    // The runtime says where the tree's log ends: a tree without events has nothing to check.
    const { cursor } = yield* transport.getSession(treeId)
    assert.isDefined(cursor, `session ${treeId}: getSession reports the log's cursor`)
    if (cursor === 0) return
    const firstEvent = yield* Stream.runHead(transport.events(treeId, 0))
    if (Option.isNone(firstEvent)) return assert.fail(`session ${treeId}: cursor ${cursor} but no stored event`)
    const probe = yield* transport.snapshot(treeId, firstEvent.value.turnId)
    assert.isAtLeast(probe.cursor, cursor ?? 0, `session ${treeId}: the cursor of getSession is a stored position`)
    const events = yield* logUntil(transport, treeId, probe.cursor)
    const header: TreeState.Header = { treeId, agent: created.agent, createdAt: created.info.createdAt }
    const state = TreeState.fold(header, events)
    assert.strictEqual(state.nextSeq, probe.cursor, "the fold reaches the transport's cursor")
    checkSnapshots(header, events, state)
    for (const turn of HashMap.values(state.turns)) {
      const snapshot = yield* transport.snapshot(turn.sessionId, turn.turnId)
      // The log moved on meanwhile (a subagent still working): this turn cannot be compared at one position.
      if (snapshot.cursor !== probe.cursor) continue
      const where = `turn ${turn.turnId} of ${turn.sessionId}`
      assert.strictEqual(snapshot.turn.cursor, turn.cursor, `${where}: cursor`)
      assert.strictEqual(snapshot.started, turn.startedSeq, `${where}: started`)
      assert.deepStrictEqual(ids(snapshot.callbacks), ids(TreeState.openCallbacks(state, turn.turnId)), where)
      const expected = TreeState.turnState(state, turn.turnId)
      assert.strictEqual(snapshot.state?._tag, expected?._tag, `${where}: state`)
      if (snapshot.state?._tag === "Blocked" && expected?._tag === "Blocked") {
        assert.strictEqual(snapshot.state.cursor, expected.cursor, `${where}: Blocked cursor`)
        assert.deepStrictEqual(ids(snapshot.state.callbacks), ids(expected.callbacks), `${where}: Blocked callbacks`)
      } else if (snapshot.state !== undefined) {
        assert.deepStrictEqual(snapshot.state, expected, `${where}: final state`)
      }
    }
    for (const session of HashMap.values(state.sessions)) {
      // `listOpen` (across trees, from the store's index) agrees with the fold, callback by callback.
      const listed = yield* transport.listOpen({ sessionId: session.sessionId })
      const after = yield* transport.snapshot(treeId, firstEvent.value.turnId)
      if (after.cursor === probe.cursor) {
        const open = state.open.flatMap((id) => {
          const record = TreeState.callback(state, id)
          return record?.callback.sessionId === session.sessionId ? [record.callback] : []
        })
        assert.deepStrictEqual(ids(listed.map((entry) => entry.callback)), ids(open), `session ${session.sessionId}`)
        for (const entry of listed) {
          assert.deepStrictEqual(entry.answerSchema, TreeState.answerSchema(state, entry.callback))
        }
      }
      const info = yield* transport.getSession(session.sessionId)
      const now = yield* transport.snapshot(treeId, firstEvent.value.turnId)
      if (now.cursor === probe.cursor) {
        assert.strictEqual(info.cursor, probe.cursor, `session ${session.sessionId}: cursor is its tree's`)
      }
      assert.strictEqual(info.parentSessionId, session.parent?.sessionId, `session ${session.sessionId}: parent`)
      assert.strictEqual(info.agent, session.agent.name, `session ${session.sessionId}: agent`)
    }
  })

export const withModel = (makeTransport: MakeTransport): WithModel => (model, body, options) =>
  Effect.flatMap(model, (scripted) =>
    Effect.provide(
      Effect.gen(function*() {
        const transport = yield* Transport.Transport
        const created: Array<Created> = []
        const recording: Transport.Service = {
          ...transport,
          createSession: (agent) =>
            Effect.tap(transport.createSession(agent), (info) => Effect.sync(() => created.push({ info, agent })))
        }
        const result = yield* Effect.provideService(body(scripted), Transport.Transport, recording)
        yield* Effect.forEach(created, (tree) => checkTree(transport, tree), { discard: true }).pipe(Effect.orDie)
        return result
      }),
      makeTransport(scripted.languageModel, { runtimeTools: options?.runtimeTools ?? [] }),
      // A fresh runtime per scenario: none of its layers is shared with another `provide` (Effect 4 shares a memo
      // map between them by default).
      { local: true }
    ))
