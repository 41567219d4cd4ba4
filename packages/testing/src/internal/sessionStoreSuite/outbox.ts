/**
 * The webhook outbox: an append writes an entry for each event the webhooks report (`callback.opened`,
 * `callback.resolved`, `turn.ended`) in the same write — an append that fails writes none —; `route` gives an entry
 * its deliveries once; `claim` hands out the earliest undelivered delivery per endpoint and tree when it is due (entry
 * n + 1 never before n was delivered), each claimed for a lease; `record` keeps the attempts; `list` is a tenant's
 * delivery log; `redeliver` makes a past event due again; two stores over one database share it all.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Outbox from "@parley/log/Outbox"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import {
  callbackId,
  ended,
  type MakeDatabase,
  opened,
  otherTreeId,
  queued,
  resolved,
  type Store,
  tree,
  treeId
} from "./fixtures.js"

const acme = { tenant: "acme", endpoint: "acme-hook" }
const audit = { tenant: "acme", endpoint: "acme-audit" }

/** Routes every unrouted entry to `targets`, at `now`. */
const routeAll = (store: Store, targets: ReadonlyArray<Outbox.Target>, now: number) =>
  Effect.gen(function*() {
    const entries = yield* store.outbox.unrouted(100)
    for (const entry of entries) yield* store.outbox.route(entry, targets, now)
    return entries
  })

const keys = (claimed: ReadonlyArray<Outbox.Claimed>) =>
  claimed.map((c) => `${c.endpoint} ${c.eventId} ${c.kind}`).sort()

export const outbox = (makeDatabase: MakeDatabase): void => {
  describe("outbox", () => {
    it.effect("an append writes an entry per reported event, in its write; a failed append writes none", () =>
      Effect.gen(function*() {
        const database = yield* makeDatabase
        const store = yield* database.open
        yield* store.eventLog.createTree(tree())
        const a = callbackId("outbox_a")
        yield* store.eventLog.append(treeId, 0, [queued(0), opened(1, a)])
        // A lost race: nothing of it reaches the outbox.
        const lost = yield* Effect.exit(store.eventLog.append(treeId, 0, [queued(0), opened(1, callbackId("x"))]))
        assert.isTrue(Exit.isFailure(lost))
        yield* store.eventLog.append(treeId, 2, [resolved(2, a), ended(3)])
        const entries = yield* store.outbox.unrouted(100)
        assert.deepStrictEqual(entries, [
          { treeId, seq: 1, kind: "callback.opened" },
          { treeId, seq: 2, kind: "callback.resolved" },
          { treeId, seq: 3, kind: "turn.ended" }
        ])
        // Routed once: a second route (a racing deliverer) adds nothing.
        yield* routeAll(store, [acme], 1_000)
        yield* store.outbox.route(entries[0], [acme, audit], 1_000)
        assert.deepStrictEqual(yield* store.outbox.unrouted(100), [])
        const log = yield* store.outbox.list("acme")
        assert.deepStrictEqual(log.map((d) => `${d.endpoint} ${d.eventId}`).sort(), [
          `acme-hook ${treeId}.1`,
          `acme-hook ${treeId}.2`,
          `acme-hook ${treeId}.3`
        ])
      }))

    it.effect("claims the head of each endpoint and tree, in order; a failure waits for its retry", () =>
      Effect.gen(function*() {
        const database = yield* makeDatabase
        const store = yield* database.open
        yield* store.eventLog.createTree(tree())
        yield* store.eventLog.createTree(tree(otherTreeId))
        const a = callbackId("outbox_order_a")
        const b = callbackId("outbox_order_b")
        yield* store.eventLog.append(treeId, 0, [queued(0), opened(1, a), resolved(2, a)])
        yield* store.eventLog.append(otherTreeId, 0, [queued(0, otherTreeId), opened(1, b, otherTreeId)])
        yield* routeAll(store, [acme, audit], 1_000)
        // Not due before its time.
        assert.deepStrictEqual(yield* store.outbox.claim(999, 10, 30_000), [])
        const first = yield* store.outbox.claim(1_000, 10, 30_000)
        assert.deepStrictEqual(keys(first), [
          `acme-audit ${treeId}.1 callback.opened`,
          `acme-audit ${otherTreeId}.1 callback.opened`,
          `acme-hook ${treeId}.1 callback.opened`,
          `acme-hook ${otherTreeId}.1 callback.opened`
        ])
        const claimedEvent = first.find((c) => c.treeId === treeId)!.event
        assert.strictEqual(claimedEvent._tag, "CallbackOpened")
        assert.strictEqual(claimedEvent.seq, 1)
        // Claimed: not handed out again within the lease, nor what follows it in its tree.
        assert.deepStrictEqual(yield* store.outbox.claim(2_000, 10, 30_000), [])
        const eventA1 = Outbox.eventId(treeId, 1)
        yield* store.outbox.record(eventA1, "acme-hook", { _tag: "Delivered", status: 204, at: 2_000 })
        yield* store.outbox.record(eventA1, "acme-audit", {
          _tag: "Failed",
          status: 503,
          error: "503 Service Unavailable",
          nextAttemptAt: 5_000
        })
        // The hook goes on with the tree's next entry; the audit endpoint waits for its retry of entry 1.
        assert.deepStrictEqual(keys(yield* store.outbox.claim(3_000, 10, 30_000)), [
          `acme-hook ${treeId}.2 callback.resolved`
        ])
        assert.deepStrictEqual(keys(yield* store.outbox.claim(5_000, 10, 30_000)), [
          `acme-audit ${treeId}.1 callback.opened`
        ])
        const audited = (yield* store.outbox.list("acme", { eventId: eventA1 })).find((d) =>
          d.endpoint === "acme-audit"
        )!
        assert.strictEqual(audited.attempts, 1)
        assert.strictEqual(audited.lastStatus, 503)
        assert.strictEqual(audited.lastError, "503 Service Unavailable")
        assert.strictEqual(audited.deliveredAt, undefined)
        const hooked = (yield* store.outbox.list("acme", { eventId: eventA1 })).find((d) => d.endpoint === "acme-hook")!
        assert.strictEqual(hooked.deliveredAt, 2_000)
        assert.strictEqual(hooked.nextAttemptAt, undefined)
        assert.strictEqual(hooked.lastStatus, 204)
      }))

    it.effect("redelivers a past event by id, for its tenant only; another store sees the same outbox", () =>
      Effect.gen(function*() {
        const database = yield* makeDatabase
        const a = yield* database.open
        const b = yield* database.open
        yield* a.eventLog.createTree(tree())
        yield* a.eventLog.append(treeId, 0, [queued(0), ended(1)])
        yield* routeAll(b, [acme, { tenant: "globex", endpoint: "globex-hook" }], 1_000)
        const id = Outbox.eventId(treeId, 1)
        for (const claimed of yield* b.outbox.claim(1_000, 10, 30_000)) {
          yield* b.outbox.record(claimed.eventId, claimed.endpoint, { _tag: "Delivered", status: 200, at: 1_500 })
        }
        assert.deepStrictEqual(yield* a.outbox.claim(60_000, 10, 30_000), [])
        assert.deepStrictEqual(yield* a.outbox.redeliver("initech", id, 2_000), [])
        assert.deepStrictEqual(yield* a.outbox.redeliver("acme", "not-an-event", 2_000), [])
        const reset = yield* a.outbox.redeliver("acme", id, 2_000)
        assert.deepStrictEqual(reset.map((d) => [d.endpoint, d.nextAttemptAt, d.deliveredAt]), [
          ["acme-hook", 2_000, undefined]
        ])
        assert.deepStrictEqual(keys(yield* b.outbox.claim(2_000, 10, 30_000)), [`acme-hook ${id} turn.ended`])
        // Tenants see their own log only.
        assert.deepStrictEqual((yield* a.outbox.list("globex")).map((d) => d.endpoint), ["globex-hook"])
        assert.deepStrictEqual(yield* a.outbox.list("initech"), [])
      }))
  })
}
