/**
 * Webhooks with a real receiver on 127.0.0.1: every `callback.opened`, `callback.resolved` and `turn.ended` of a
 * tenant's sessions reaches its endpoint signed (the receiver's `Webhook.verify` accepts it; a wrong secret does not),
 * with the event id as the idempotency key, in the order of the tree's log; a receiver that is down gets everything
 * once it is back; a slow one holds no turn; the delivery log and redelivery are the tenant's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Turn, Webhook } from "@parley/core"
import type { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Redacted } from "effect"
import { brain, locator } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { type Receiver, startReceiver } from "./fixtures/receiver.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const secret = "whsec_test_0123456789"

const serverWith = (receiver: Receiver, webhooks?: Partial<ParleyServer.Webhooks>) =>
  Effect.gen(function*() {
    const model = yield* ScriptedModel.fromFunction(brain)
    return yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
      runtimeTools: [],
      server: {
        webhooks: {
          endpoints: [{ id: "alice-hook", tenant: "alice", url: receiver.url, secret }],
          poll: "20 millis",
          backoff: "100 millis",
          maxBackoff: "400 millis",
          timeout: "2 seconds",
          ...webhooks
        }
      }
    })
  })

/** One turn of the locator: the approval allowed, the client tool answered, completed. */
const runTurn = (base: string) =>
  Effect.gen(function*() {
    const session = yield* Agent.startSession(locator)
    const turn = yield* Session.sendMessage(session, "Where am I?")
    const first = yield* Turn.result(turn)
    if (first._tag !== "Blocked") return yield* Effect.die(`not blocked: ${first._tag}`)
    yield* Turn.answer(turn, first.callbacks[0].id, new Answer.AllowApproval())
    const second = yield* Turn.result(turn, { after: first })
    if (second._tag !== "Blocked") return yield* Effect.die(`not blocked: ${second._tag}`)
    yield* Turn.answer(turn, second.callbacks[0].id, Answer.ClientToolResult.success({ city: "Lyon" }))
    const done = yield* Turn.result(turn, { after: second })
    return { done, sessionId: turn.sessionId }
  }).pipe(Effect.provide(HttpTransport.layer({ url: base, apiKey: Redacted.make(keys.alice) })))

const kinds = ["callback.opened", "callback.resolved", "callback.opened", "callback.resolved", "turn.ended"]

/** The payloads' first arrivals (at least once: a repeat is dropped by id, as a receiver would). */
const firstOf = (payloads: ReadonlyArray<Webhook.Payload>) => {
  const seen = new Set<string>()
  return payloads.filter((payload) => !seen.has(payload.id) && seen.add(payload.id) !== undefined)
}

describe("ParleyServer webhooks", () => {
  it.live(
    "delivers the turn's callbacks and its end, signed, in order, with the event id as idempotency key",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const base = yield* serverWith(receiver)
        const { done, sessionId } = yield* runTurn(base)
        assert.strictEqual(done._tag, "Completed")
        yield* receiver.waitFor(5)
        const payloads = yield* receiver.payloads(secret)
        assert.deepStrictEqual(payloads.map((payload) => payload.type), kinds)
        assert.deepStrictEqual(payloads.map((payload) => payload.treeId), Array(5).fill(sessionId))
        const seqs = payloads.map((payload) => payload.seq)
        assert.deepStrictEqual(seqs, [...seqs].sort((a, b) => a - b))
        const opened = payloads[0].event
        assert.strictEqual(opened._tag, "CallbackOpened")
        if (opened._tag === "CallbackOpened") assert.strictEqual(opened.callback._tag, "OpenApproval")
        for (const [i, request] of receiver.received.entries()) {
          assert.strictEqual(request.headers["parley-event-id"], payloads[i].id)
          assert.strictEqual(request.headers["idempotency-key"], payloads[i].id)
          assert.strictEqual(request.headers["parley-event-type"], payloads[i].type)
          assert.strictEqual(request.headers["content-type"], "application/json")
          assert.strictEqual(payloads[i].id, `${sessionId}.${payloads[i].seq}`)
        }
        // The receiver's helper refuses a wrong secret and a tampered body.
        const [first] = receiver.received
        const header = first.headers["parley-signature"] as string
        assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/)
        const wrong = yield* Effect.flip(Webhook.verify({ secrets: "whsec_other", header, body: first.body }))
        assert.strictEqual(wrong.reason, "mismatch")
        assert.isFalse(
          yield* Effect.promise(() => Webhook.isValid({ secrets: secret, header, body: `${first.body} ` }))
        )

        // The delivery log: alice's five, delivered; bob sees none of them.
        const log = yield* request(`${base}/webhooks/deliveries`, { key: keys.alice })
        assert.strictEqual(log.status, 200)
        const deliveries = log.json as ReadonlyArray<Webhook.Delivery>
        assert.strictEqual(deliveries.length, 5)
        for (const delivery of deliveries) {
          assert.strictEqual(delivery.endpoint, "alice-hook")
          assert.strictEqual(delivery.attempts, 1)
          assert.strictEqual(delivery.lastStatus, 204)
          assert.isString(delivery.deliveredAt)
          assert.isUndefined(delivery.nextAttemptAt)
        }
        assert.deepStrictEqual((yield* request(`${base}/webhooks/deliveries`, { key: keys.bob })).json, [])

        // Redelivery by id: the same event again (same id), for its tenant only.
        const eventId = payloads[4].id
        const foreign = yield* request(`${base}/webhooks/deliveries/redeliver`, {
          method: "POST",
          key: keys.bob,
          body: { eventId }
        })
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual((foreign.json as { readonly _tag: string })._tag, "DeliveryNotFound")
        const unknown = yield* request(`${base}/webhooks/deliveries/redeliver`, {
          method: "POST",
          key: keys.alice,
          body: { eventId: "ses_nope.1" }
        })
        assert.strictEqual(unknown.status, 404)
        const again = yield* request(`${base}/webhooks/deliveries/redeliver`, {
          method: "POST",
          key: keys.alice,
          body: { eventId }
        })
        assert.strictEqual(again.status, 200)
        yield* receiver.waitFor(6)
        assert.strictEqual(receiver.received[5].headers["parley-event-id"], eventId)
        assert.strictEqual(receiver.received[5].body, receiver.received[4].body)
        const one = yield* request(`${base}/webhooks/deliveries?eventId=${encodeURIComponent(eventId)}`, {
          key: keys.alice
        })
        yield* Effect.sleep("200 millis")
        const [redelivered] = (yield* request(`${base}/webhooks/deliveries?eventId=${encodeURIComponent(eventId)}`, {
          key: keys.alice
        })).json as ReadonlyArray<Webhook.Delivery>
        assert.strictEqual(one.status, 200)
        assert.strictEqual(redelivered.attempts, 2)
        // No key, no log.
        assert.strictEqual((yield* request(`${base}/webhooks/deliveries`, {})).status, 401)
      }),
    { timeout: 60_000 }
  )

  it.live(
    "a receiver that is down gets everything once it is back, in order; the log shows the retries",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        const base = yield* serverWith(receiver)
        yield* receiver.stop
        const { done } = yield* runTurn(base)
        assert.strictEqual(done._tag, "Completed")
        // Down for a while: the deliverer keeps trying, the first of the tree holds the others back.
        yield* Effect.sleep("1 second")
        const log = (yield* request(`${base}/webhooks/deliveries`, { key: keys.alice })).json as ReadonlyArray<
          Webhook.Delivery
        >
        assert.strictEqual(log.length, 5)
        assert.isTrue(log.every((delivery) => delivery.deliveredAt === undefined))
        const head = log.find((delivery) => delivery.seq === Math.min(...log.map((d) => d.seq)))!
        assert.isAtLeast(head.attempts, 2)
        assert.isString(head.lastError)
        assert.isString(head.nextAttemptAt)
        assert.isTrue(log.filter((delivery) => delivery !== head).every((delivery) => delivery.attempts === 0))
        yield* receiver.start
        yield* receiver.waitFor(5)
        const payloads = firstOf(yield* receiver.payloads(secret))
        assert.deepStrictEqual(payloads.map((payload) => payload.type), kinds)
        const seqs = payloads.map((payload) => payload.seq)
        assert.deepStrictEqual(seqs, [...seqs].sort((a, b) => a - b))
      }),
    { timeout: 60_000 }
  )

  it.live("a receiver that answers 500 is retried until it answers 2xx", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      receiver.status = 500
      const base = yield* serverWith(receiver)
      yield* runTurn(base)
      yield* receiver.waitFor(3)
      receiver.status = 200
      // Every event, each at least once, however many attempts failed before.
      const until = Date.now() + 30_000
      while (firstOf(yield* receiver.payloads(secret)).length < 5 && Date.now() < until) {
        yield* Effect.sleep("20 millis")
      }
      const payloads = firstOf(yield* receiver.payloads(secret))
      assert.deepStrictEqual(payloads.map((payload) => payload.type), kinds)
      const log = (yield* request(`${base}/webhooks/deliveries`, { key: keys.alice })).json as ReadonlyArray<
        Webhook.Delivery
      >
      const retried = log.filter((delivery) => delivery.attempts > 1)
      assert.isAtLeast(retried.length, 1)
    }), { timeout: 60_000 })

  it.live(
    "a slow receiver holds no turn: the turn completes while its webhooks are still on their way",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startReceiver()
        receiver.delay = 1_500
        const base = yield* serverWith(receiver, { timeout: "5 seconds" })
        const started = Date.now()
        const { done } = yield* runTurn(base)
        const took = Date.now() - started
        assert.strictEqual(done._tag, "Completed")
        // Five deliveries one after another take at least 7.5 s; the turn took far less.
        assert.isBelow(took, 5_000)
        const log = (yield* request(`${base}/webhooks/deliveries`, { key: keys.alice })).json as ReadonlyArray<
          Webhook.Delivery
        >
        assert.isBelow(log.filter((delivery) => delivery.deliveredAt !== undefined).length, 5)
        yield* receiver.waitFor(5, 30_000)
      }),
    { timeout: 60_000 }
  )
})
