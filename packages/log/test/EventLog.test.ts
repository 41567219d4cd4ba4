import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Callback, Ids, Permissions, TurnEvent } from "@parley/core"
import { EventLog, SessionStore } from "@parley/log"
import { DateTime, Effect, Option, Queue } from "effect"

// What `EventLog.make` writes once for every driver: the rows of an append derived from its events, the seq check
// before the driver, and the fan-out and `changes` after the driver committed (or after another process's append).

const treeId = Ids.SessionId.make("ses_log")
const childId = Ids.SessionId.make("ses_log_child")
const turnId = Ids.TurnId.make("turn_1")
const at = DateTime.makeUnsafe(1_000)
const common = { sessionId: treeId, turnId, at }
const queued = (seq: number, sessionId = treeId) =>
  new TurnEvent.TurnQueued({ ...common, sessionId, seq, input: `m${seq}` })
const approval = (id: string, expiresAt?: DateTime.Utc) =>
  new Callback.OpenApproval({
    id: Ids.CallbackId.make(id),
    sessionId: childId,
    turnId,
    openedAt: at,
    expiresAt,
    request: new Callback.ApprovalRequest({
      tool: new Callback.ToolRef({ id: Ids.ToolId.make("client.send"), name: "send" }),
      toolCallId: "call_1",
      arguments: {},
      decidedBy: new Permissions.DefaultDecision()
    })
  })

/** The memory driver, counting what reaches it, with moves another process would make. */
const counted = Effect.gen(function*() {
  const { driver, leases } = yield* SessionStore.makeMemoryDriver
  const calls = { append: 0, readRecent: 0 }
  let moved: ((treeId: Ids.SessionId, nextSeq: number) => Effect.Effect<void>) | undefined
  const wrapped: EventLog.Driver = {
    ...driver,
    append: (rows) => Effect.andThen(Effect.sync(() => calls.append++), driver.append(rows)),
    readRecent: (id, from) => Effect.andThen(Effect.sync(() => calls.readRecent++), driver.readRecent(id, from)),
    follow: (tell) => Effect.sync(() => void (moved = tell))
  }
  const log = yield* EventLog.make(wrapped)
  yield* log.createTree({ treeId, agent: AgentSpec.make({ name: "a" }), createdAt: at })
  return { calls, driver, leases, log, moved: (nextSeq: number) => moved!(treeId, nextSeq) }
})

describe("EventLog.make", () => {
  it("derives an append's rows from its events: sessions, callbacks opened and resolved, turns, paused", () => {
    const rows = EventLog.rowsOf(
      treeId,
      4,
      [
        queued(4),
        new TurnEvent.CallbackOpened({ ...common, sessionId: childId, seq: 5, callback: approval("cb_1", at) }),
        new TurnEvent.CallbackOpened({ ...common, sessionId: childId, seq: 6, callback: approval("cb_2") }),
        new TurnEvent.CallbackResolved({
          ...common,
          seq: 7,
          callbackId: Ids.CallbackId.make("cb_0"),
          resolution: "expired"
        }),
        new TurnEvent.TurnBlocked({ ...common, seq: 8, callbackIds: [Ids.CallbackId.make("cb_1")] })
      ],
      { owner: "engine-a", epoch: 2 },
      "relaxed"
    )
    assert.deepStrictEqual(rows.sessions, [{ sessionId: treeId, seq: 4 }, { sessionId: childId, seq: 5 }])
    assert.deepStrictEqual(
      rows.opened.map((row) => [row.callbackId, row.sessionId, row.kind, row.seq, row.expiresAt]),
      [["cb_1", childId, "approval", 5, 1_000], ["cb_2", childId, "approval", 6, undefined]]
    )
    assert.deepStrictEqual(rows.resolved, [{ callbackId: Ids.CallbackId.make("cb_0"), seq: 7, resolution: "expired" }])
    assert.deepStrictEqual([rows.openTurns, rows.paused, rows.expectedSeq], [1, true, 4])
    assert.deepStrictEqual([rows.fence, rows.durability], [{ owner: "engine-a", epoch: 2 }, "relaxed"])
  })

  it.effect("checks the events' seqs before the driver: a misnumbered append is a SeqConflict with the log's length", () =>
    Effect.gen(function*() {
      const { calls, log } = yield* counted
      yield* log.append(treeId, 0, [queued(0)])
      const conflict = yield* Effect.flip(log.append(treeId, 1, [queued(2)]))
      assert.deepStrictEqual([conflict._tag, calls.append], ["SeqConflict", 1])
      if (conflict._tag === "SeqConflict") assert.strictEqual(conflict.actual, 1)
      const missing = yield* Effect.flip(log.append(childId, 0, [queued(1, childId)]))
      assert.strictEqual(missing._tag, "StoreError")
      yield* log.append(treeId, 1, [])
      assert.strictEqual(calls.append, 1, "an empty append reaches no driver")
    }))

  it.effect("an append says what it wrote: no bytes from the memory store (it keeps the events), 0 for no events", () =>
    Effect.gen(function*() {
      const { log } = yield* counted
      assert.deepStrictEqual(yield* log.append(treeId, 0, [queued(0)]), { bytes: undefined })
      assert.deepStrictEqual(yield* log.append(treeId, 1, []), { bytes: 0 })
    }))

  it.effect("hands a committed append to the subscribers without a read, and tells changes; a refused one tells none", () =>
    Effect.gen(function*() {
      const { calls, log } = yield* counted
      const events = yield* log.subscribe(treeId, 0)
      const changes = yield* log.changes()
      const readsBefore = calls.readRecent
      yield* log.append(treeId, 0, [queued(0), queued(1)])
      yield* Effect.flip(log.append(treeId, 0, [queued(0)]))
      const taken = yield* Queue.takeAll(events)
      assert.deepStrictEqual(taken.map((event) => event.seq), [0, 1])
      assert.strictEqual(calls.readRecent, readsBefore, "no read after the store's own append")
      const told = yield* Queue.takeAll(changes)
      assert.deepStrictEqual(told, [{ treeId, nextSeq: 2 }])
    }))

  it.effect("changes leave out the appends fenced by the watcher's own leases, and only those", () =>
    Effect.gen(function*() {
      const { leases, log } = yield* counted
      const lease = Option.getOrThrow(yield* leases.claim(treeId, "engine-a"))
      const all = yield* log.changes()
      const exceptA = yield* log.changes({ exceptOwner: "engine-a" })
      const exceptB = yield* log.changes({ exceptOwner: "engine-b" })
      yield* log.append(treeId, 0, [queued(0)], lease)
      yield* log.append(treeId, 1, [queued(1)])
      const told = (mailbox: typeof all) =>
        Effect.map(Queue.takeAll(mailbox), (changes) => changes.map((change) => change.nextSeq))
      assert.deepStrictEqual(yield* told(all), [1, 2])
      assert.deepStrictEqual(yield* told(exceptB), [1, 2])
      assert.deepStrictEqual(
        yield* told(exceptA),
        [2],
        "engine-a's own fenced append is left out, an unfenced one is not"
      )
    }))

  it.effect("after another process's append (the driver's follow), tells changes and lets subscribers read it", () =>
    Effect.gen(function*() {
      const { driver, log, moved } = yield* counted
      const events = yield* log.subscribe(treeId, 0)
      const changes = yield* log.changes()
      // Written by "another process": straight into the driver, which tells of it.
      yield* driver.append(EventLog.rowsOf(treeId, 0, [queued(0)], undefined, "sync"))
      yield* moved(1)
      const told = yield* Queue.takeAll(changes)
      assert.deepStrictEqual(told, [{ treeId, nextSeq: 1 }])
      const taken = yield* Queue.takeAll(events)
      assert.deepStrictEqual(taken.map((event) => event.seq), [0])
      assert.deepStrictEqual(yield* log.treeOf(treeId), Option.some(treeId))
    }))
})
