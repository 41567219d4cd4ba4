/**
 * `parley webhooks deliveries` and `parley webhooks redeliver` (the real executable) against a real server that
 * delivers to a real receiver on 127.0.0.1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import * as Fixture from "./fixtures/server.js"

/** A receiver that answers 204 and counts what it got, by event id. */
const receiver = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly got: Array<string>; readonly close: () => void }>((resume) => {
    const got: Array<string> = []
    const server = createServer((request, response) => {
      got.push(String(request.headers["parley-event-id"]))
      request.resume()
      request.on("end", () => {
        response.statusCode = 204
        response.end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
        got,
        close: () => {
          server.close()
          server.closeAllConnections()
        }
      })))
  }),
  (receiver) => Effect.sync(receiver.close)
)

describe("parley webhooks", () => {
  it.live(
    "deliveries: the tenant's log as a table (or JSON); redeliver sends an event again; an unknown one exits 1",
    () =>
      Effect.gen(function*() {
        const hooks = yield* receiver
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"), 0, {
          endpoints: [{ id: "tester-hook", tenant: "tester", url: hooks.url, secret: "whsec_cli" }],
          poll: "20 millis"
        })
        const transport = yield* Fixture.transport(server.url)
        const session = yield* transport.createSession(Fixture.locator.spec)
        yield* transport.sendMessage(session.sessionId, "Where am I?")
        const eventId = yield* Effect.suspend(() =>
          hooks.got.length > 0 ? Effect.succeed(hooks.got[0]) : Effect.fail("not yet" as const)
        ).pipe(Effect.retry({ times: 300, schedule: Schedule.spaced("50 millis") }), Effect.orDie)
        assert.match(eventId, new RegExp(`^${session.sessionId}\\.\\d+$`))
        const env = { PARLEY_URL: server.url }

        const table = yield* Effect.suspend(() => Fixture.parley(["webhooks", "deliveries"], env)).pipe(
          Effect.repeat({
            until: (result) => result.stdout.includes("delivered"),
            schedule: Schedule.spaced("100 millis"),
            times: 50
          })
        )
        assert.strictEqual(table.code, 0, table.stderr)
        const [header, row] = table.stdout.split("\n")
        assert.deepStrictEqual(header.split(/\s+/).filter((cell) => cell !== ""), [
          "EVENT",
          "TYPE",
          "ENDPOINT",
          "ATTEMPTS",
          "LAST",
          "STATE"
        ])
        assert.deepStrictEqual(row.split(/\s+/).filter((cell) => cell !== ""), [
          eventId,
          "callback.opened",
          "tester-hook",
          "1",
          "204",
          "delivered"
        ])
        const json = yield* Fixture.parley(["webhooks", "deliveries", "--event", eventId, "--json"], env)
        assert.strictEqual(json.code, 0, json.stderr)
        const [delivery] = JSON.parse(json.stdout) as ReadonlyArray<
          { readonly eventId: string; readonly attempts: number }
        >
        assert.strictEqual(delivery.eventId, eventId)

        const again = yield* Fixture.parley(["webhooks", "redeliver", eventId], env)
        assert.strictEqual(again.code, 0, again.stderr)
        assert.strictEqual(again.stdout.trim(), `redelivering ${eventId} to tester-hook`)
        yield* Effect.suspend(() => hooks.got.length >= 2 ? Effect.void : Effect.fail("not yet" as const)).pipe(
          Effect.retry({ times: 300, schedule: Schedule.spaced("50 millis") }),
          Effect.orDie
        )
        assert.strictEqual(hooks.got[1], eventId)

        const unknown = yield* Fixture.parley(["webhooks", "redeliver", "ses_nope.1"], env)
        assert.strictEqual(unknown.code, 1)
        assert.include(unknown.stderr, "no webhook delivery of event ses_nope.1")
      }),
    { timeout: 120_000 }
  )
})
