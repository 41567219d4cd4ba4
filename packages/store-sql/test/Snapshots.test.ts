import { assert, describe, it } from "@effect/vitest"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { SnapshotCodec } from "@parley/log"
import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { ClientTool, Tool } from "@parley/tools"
import { Effect, Layer, Option, Schema } from "effect"
import { sqliteFile, storeOf } from "./databases.js"

// Snapshots over SQLite (issue 9): a turn with a long log (thousands of events: a model that makes a hundred tool
// calls per step, each run by the runtime) blocks on a client tool call and its engine stops; a fresh engine over the
// same file loads the tree from the snapshot and the events after it — never the whole log — answers the call and
// completes the turn with the whole conversation.

const STEPS = 12
const CALLS = 100

const tick = Tool.make("tick", {
  description: "Counts one.",
  parameters: { n: Schema.Number },
  success: Schema.Struct({ n: Schema.Number })
}, ({ n }) => ({ n }))

const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  success: Schema.Struct({ city: Schema.String })
})

const counter = Agent.make({
  name: "counter",
  model: "scripted",
  instructions: "Count, then say where.",
  tools: [tick.spec, getLocation],
  permissionMode: "allow"
})

/** `STEPS` steps of `CALLS` ticks each, then get_location, then how many ticks it saw and where. */
const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  const ticks = results.filter((result) => result.name === "tick" && !result.isFailure).length
  const located = results.find((result) => result.name === "get_location")
  if (located !== undefined) {
    return ScriptedModel.text(`Counted ${ticks} in ${(located.result as { readonly city: string }).city}.`)
  }
  const step = Math.floor(ticks / CALLS)
  if (step >= STEPS) return ScriptedModel.toolCall("get_location", {})
  return ScriptedModel.reply({
    toolCalls: Array.from({ length: CALLS }, (_, i) => ({ name: "tick", params: { n: step * CALLS + i } }))
  })
}

const engine = (store: SessionStore.Services, model: ScriptedModel.Service) =>
  LocalTransport.layerWith({ snapshotEvery: 1_000 }).pipe(
    Layer.provide([
      SessionStore.layer(store),
      Connectors.layerEmpty,
      RuntimeTools.layer(tick),
      Models.layer(Models.single(model.languageModel))
    ])
  )

const stateAs = <Tag extends TurnState.TurnState["_tag"]>(
  state: TurnState.TurnState,
  tag: Tag
): Extract<TurnState.TurnState, { _tag: Tag }> => {
  assert.strictEqual(
    state._tag,
    tag,
    `the turn is ${state._tag}${state._tag === "Failed" ? ` (${state.error.message})` : ""}`
  )
  return state as Extract<TurnState.TurnState, { _tag: Tag }>
}

describe("Snapshots on SQLite", () => {
  it.live(
    "a fresh engine loads a long tree from its snapshot and the events after it, answers, and completes",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const filename = yield* sqliteFile
        const open = storeOf(SqlStore.layerSqlite({ filename, synchronous: "normal" }))

        // Engine A: the long turn, until it blocks on get_location; then A stops.
        const storeA = yield* open
        const modelA = yield* ScriptedModel.fromFunction(brain)
        const blocked = stateAs(
          yield* Agent.run(counter, "Count.").pipe(Effect.provide(engine(storeA, modelA))),
          "Blocked"
        )
        const length = (yield* storeA.eventLog.read(blocked.sessionId, 0)).length
        assert.isAbove(length, STEPS * CALLS * 3, "three events per tick")
        // The engine saves in the background: the latest snapshot is within snapshotEvery of the log's end.
        const snapshot = yield* Effect.gen(function*() {
          while (true) {
            const saved = yield* storeA.snapshots.load(blocked.sessionId)
            if (Option.isSome(saved) && saved.value.seq > length - 1_000) return saved.value
            yield* Effect.sleep("10 millis")
          }
        }).pipe(
          Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.fail(new Error("no recent snapshot")) })
        )
        assert.strictEqual(snapshot.version, SnapshotCodec.version)

        // Engine B, over another store on the same file, counting what it reads.
        const storeB = yield* open
        const reads: Array<{ readonly from: number; readonly events: number }> = []
        const counting: SessionStore.Services = {
          ...storeB,
          eventLog: {
            ...storeB.eventLog,
            read: (treeId, from) =>
              Effect.tap(
                storeB.eventLog.read(treeId, from),
                (events) => Effect.sync(() => reads.push({ from, events: events.length }))
              )
          }
        }
        const modelB = yield* ScriptedModel.fromFunction(brain)
        const final = yield* Effect.gen(function*() {
          const session = yield* Agent.session(counter, blocked.sessionId)
          const turn = yield* Session.turn(session, blocked.turnId)
          const open = yield* Turn.openCallbacks(turn)
          assert.deepStrictEqual(open.map((callback) => callback.id), blocked.callbacks.map((callback) => callback.id))
          yield* Turn.answer(turn, open[0].id, Answer.ClientToolResult.success({ city: "Lyon" }))
          return yield* Turn.result(turn, { after: blocked })
        }).pipe(Effect.provide(engine(counting, modelB)))

        // B's model saw every tick of A's steps: the conversation came whole from the snapshot.
        assert.strictEqual(stateAs(final, "Completed").text, `Counted ${STEPS * CALLS} in Lyon.`)
        assert.strictEqual((yield* modelB.calls).length, 1)
        assert.strictEqual(reads[0].from, snapshot.seq, "the load reads from the snapshot on")
        assert.strictEqual(reads[0].events, length - snapshot.seq)
        assert.isTrue(reads.every((read) => read.from >= snapshot.seq), JSON.stringify(reads))
        const read = reads.reduce((sum, entry) => sum + entry.events, 0)
        assert.isBelow(read, 1_000, `B read ${read} events of a log of ${length}`)
      })),
    { timeout: 120_000 }
  )
})
