/**
 * The directory hooks in Chromium against a real server on 127.0.0.1 (through `fixtures/directory.tsx`): the agents
 * with the example prompts of their description; a prompt starts a session and sends it (one turn); the session
 * listed with its title, agent and state as it changes (waiting for an answer, then completed); an approval answered
 * with `remember` listed as a grant and revoked (gone from the server's list too); a message to an unknown session a
 * typed `SessionNotFound`. And `describe` and `summarize` on their own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Answer } from "@parley/core"
import type { Transport } from "@parley/core"
import { Directory } from "@parley/react"
import { Effect, Schedule } from "effect"
import * as path from "node:path"
import * as Fixture from "./fixtures/server.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const waitOpen = (transport: Transport.Service, kind: "approval" | "client_tool") =>
  transport.listOpen().pipe(
    Effect.map((open) => open.find((entry) => entry.callback.kind === kind)),
    Effect.flatMap((found) => (found === undefined ? Effect.fail("not yet" as const) : Effect.succeed(found))),
    Effect.retry({ times: 300, schedule: Schedule.spaced("100 millis") }),
    Effect.orDie
  )

describe("Directory", () => {
  it("describe: the summary, and each quoted prompt after Try:", () => {
    const described = Directory.describe({ ...Fixture.locator.spec })
    assert.strictEqual(described.summary, "Says where you are.")
    assert.deepStrictEqual(described.examples, ["Where am I?", "Which city is this?"])
    const plain = Directory.describe({ ...Fixture.locator.spec, description: "Only words." })
    assert.deepStrictEqual(plain, { summary: "Only words.", examples: [] })
    assert.deepStrictEqual(Directory.describe({ ...Fixture.locator.spec, description: undefined }), {
      summary: "",
      examples: []
    })
  })

  it.live(
    "in Chromium: agents and prompts, a session started and listed with its state, grants listed and revoked",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const browser = yield* Fixture.browser("directory")
        const page = yield* promise(() => browser.newPage())
        yield* promise(() => page.goto(`${server.url}/react-test?key=${Fixture.key}`))

        const agent = page.locator("#agents li[data-agent=locator]")
        yield* promise(() => agent.locator(".summary", { hasText: "Says where you are." }).waitFor())
        assert.deepStrictEqual(
          yield* promise(() => agent.locator("button.prompt").allInnerTexts()),
          ["Where am I?", "Which city is this?"]
        )

        yield* promise(() => page.locator("#send-unknown").click())
        yield* promise(() => page.locator("#outcome", { hasText: "SessionNotFound" }).waitFor())

        yield* promise(() => agent.getByRole("button", { name: "Where am I?" }).click())
        yield* promise(() => page.locator("#outcome", { hasText: "sent" }).waitFor({ timeout: 20_000 }))
        const approval = yield* waitOpen(transport, "approval")
        const sessionId = approval.callback.sessionId
        const listed = page.locator(`#sessions li[data-session="${sessionId}"]`)
        yield* promise(() => listed.and(page.locator("[data-state=waiting]")).waitFor({ timeout: 20_000 }))
        assert.strictEqual(yield* promise(() => listed.locator(".title").innerText()), "Where am I?")
        assert.strictEqual(yield* promise(() => listed.locator(".agent").innerText()), "locator")
        const turns = yield* transport.listOpen({ sessionId })
        assert.strictEqual(turns.length, 1, "one turn, one approval")

        yield* transport.answer({
          sessionId,
          turnId: approval.callback.turnId,
          callbackId: approval.callback.id,
          answer: new Answer.AllowApproval({ remember: "session" })
        })
        const grant = page.locator("#grants li")
        yield* promise(() => grant.waitFor({ timeout: 20_000 }))
        assert.include(yield* promise(() => grant.innerText()), "allow client.get_location session")
        const tool = yield* waitOpen(transport, "client_tool")
        yield* transport.answer({
          sessionId,
          turnId: tool.callback.turnId,
          callbackId: tool.callback.id,
          answer: Answer.ClientToolResult.success({ city: "Lyon" })
        })
        yield* promise(() => listed.and(page.locator("[data-state=completed]")).waitFor({ timeout: 20_000 }))

        yield* promise(() => grant.getByRole("button", { name: "Revoke" }).click())
        yield* promise(() => page.locator("#revoked", { hasText: "revoked" }).waitFor())
        yield* promise(() => grant.waitFor({ state: "detached", timeout: 20_000 }))
        assert.deepStrictEqual(yield* Effect.orDie(transport.grants(sessionId)), [])
      }),
    { timeout: 120_000 }
  )
})
