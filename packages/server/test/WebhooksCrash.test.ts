/**
 * Webhooks across a `kill -9` of the server: the outbox is written with the events, so a server killed between an
 * event and its delivery delivers it once it is back (on the same file) — nothing lost, order per tree kept, and a
 * delivery in flight at the kill is sent again (at least once), never more.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, Answer, Session, Turn } from "@parley/core"
import type { Webhook } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { locator } from "./fixtures/agents.js"
import { startServerProcess } from "./fixtures/processes.js"
import { startReceiver } from "./fixtures/receiver.js"
import { keys, sqliteFile } from "./fixtures/servers.js"

const secret = "whsec_crash_0123456789"
const kinds = ["callback.opened", "callback.resolved", "callback.opened", "callback.resolved", "turn.ended"]

const fast = Schedule.min([Schedule.exponential("10 millis"), Schedule.spaced("200 millis")])

const transportAt = (url: string) =>
  Layer.fresh(HttpTransport.layer({ url, apiKey: Redacted.make(keys.alice), reconnect: fast }))

const distinct = (payloads: ReadonlyArray<Webhook.Payload>) => {
  const seen = new Set<string>()
  return payloads.filter((payload) => !seen.has(payload.id) && seen.add(payload.id) !== undefined)
}

describe("ParleyServer webhooks: kill -9", () => {
  for (
    const [what, setup] of [
      ["the receiver down while the server dies", "down"],
      ["a delivery in flight when the server dies", "slow"]
    ] as const
  ) {
    it.live(
      `${what}: every event delivered after the restart, in order, no more than once beyond the in-flight one`,
      () =>
        Effect.gen(function*() {
          const receiver = yield* startReceiver()
          if (setup === "down") yield* receiver.stop
          else receiver.delay = 700
          const webhook = { url: receiver.url, secret }
          const filename = yield* Effect.orDie(sqliteFile)
          const first = yield* startServerProcess({ filename, port: 0, owner: "server-a", webhook })
          const context = yield* Layer.build(transportAt(first.url))
          const { second, turn } = yield* Effect.gen(function*() {
            const session = yield* Agent.startSession(locator)
            const turn = yield* Session.sendMessage(session, "Where am I?")
            const first = yield* Turn.result(turn)
            if (first._tag !== "Blocked") return yield* Effect.die(`not blocked: ${first._tag}`)
            yield* Turn.answer(turn, first.callbacks[0].id, new Answer.AllowApproval())
            const second = yield* Turn.result(turn, { after: first })
            if (second._tag !== "Blocked") return yield* Effect.die(`not blocked: ${second._tag}`)
            return { second, turn }
          }).pipe(Effect.provide(context))
          // Killed between the events and (some of) their deliveries.
          if (setup === "slow") yield* receiver.waitFor(1)
          yield* first.kill
          const delivered = receiver.received.length
          assert.isBelow(delivered, 3, "the kill came before every delivery")
          if (setup === "down") yield* receiver.start
          receiver.delay = 0
          yield* startServerProcess({ filename, port: first.port, owner: "server-a", webhook })
          const done = yield* Effect.gen(function*() {
            yield* Turn.answer(turn, second.callbacks[0].id, Answer.ClientToolResult.success({ city: "Lyon" }))
            return yield* Turn.result(turn, { after: second })
          }).pipe(Effect.provide(context))
          assert.strictEqual(done._tag, "Completed")
          // A delivery in flight at the kill waits for its claim to lapse (the timeout and 5 s) before it is sent again.
          const until = Date.now() + 40_000
          while (distinct(yield* receiver.payloads(secret)).length < 5 && Date.now() < until) {
            yield* Effect.sleep("50 millis")
          }
          yield* Effect.sleep("300 millis")
          const payloads = yield* receiver.payloads(secret)
          const firsts = distinct(payloads)
          assert.deepStrictEqual(firsts.map((payload) => payload.type), kinds)
          assert.deepStrictEqual(firsts.map((payload) => payload.treeId), Array(5).fill(turn.sessionId))
          const seqs = firsts.map((payload) => payload.seq)
          assert.deepStrictEqual(seqs, [...seqs].sort((a, b) => a - b), "in the order of the tree's log")
          // At least once: only what was in flight at the kill may come twice.
          assert.isAtMost(payloads.length - firsts.length, setup === "slow" ? 1 : 0)
        }),
      { timeout: 120_000 }
    )
  }
})
