/**
 * The hooks in Chromium (headless, playwright-core) against a real server on 127.0.0.1, through the test page
 * (`fixtures/page.tsx`, in React's StrictMode: every hook is mounted twice): a session's turns live, each event once
 * and in order; the inbox read again when the session opens or resolves a callback (its own poll is a minute); typed
 * answers and the server's typed errors; "answered here" only of the answers the page sent; and across a server
 * restart the connection's state (`Unreachable`, then `Connected` by itself) and events resumed without a gap or a
 * duplicate.
 */
import { assert, describe, it } from "@effect/vitest"
import { Answer } from "@parley/core"
import type { Transport } from "@parley/core"
import { Effect, Schedule, Stream } from "effect"
import * as path from "node:path"
import type { Page } from "playwright-core"
import * as Fixture from "./fixtures/server.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The `seq`s the page shows, in order. */
const shownSeqs = (page: Page) =>
  promise(() =>
    page.locator("#events li").evaluateAll((items) => items.map((item) => Number(item.getAttribute("data-seq"))))
  )

/** The session's stored events, as another client reads them: up to its turn's end. */
const storedSeqs = (transport: Transport.Service, sessionId: string) =>
  transport.events(sessionId as never, 0).pipe(
    Stream.filter((event) => event._tag !== "MessageDelta"),
    Stream.takeUntil((event) => event._tag === "TurnEnded"),
    Stream.map((event) => event.seq),
    Stream.runCollect,
    Effect.orDie
  )

const waitOpen = (transport: Transport.Service, sessionId: string, kind: "approval" | "client_tool") =>
  transport.listOpen().pipe(
    Effect.map((open) => open.find((entry) => entry.callback.sessionId === sessionId && entry.callback.kind === kind)),
    Effect.flatMap((found) => (found === undefined ? Effect.fail("not yet" as const) : Effect.succeed(found))),
    Effect.retry({ times: 300, schedule: Schedule.spaced("100 millis") }),
    Effect.orDie
  )

const answerIn = (page: Page, callbackId: string, kind: "allow" | "result") =>
  promise(() => page.evaluate(([id, k]) => window.parleyAnswer!(id, k), [callbackId, kind] as const))

describe("@parley/react in Chromium", { concurrent: false }, () => {
  it.live(
    "a session's turns live; the inbox refreshed by its events; typed answers and errors; answered here or not",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const browser = yield* Fixture.browser()
        const session = yield* transport.createSession(Fixture.locator.spec)
        const page = yield* Fixture.openPage(browser, server.url, session.sessionId)
        yield* promise(() => page.locator("#connection", { hasText: "Connected" }).waitFor())
        yield* promise(() => page.locator("#status", { hasText: "live" }).waitFor())
        yield* promise(() => page.locator("#inbox-loading", { hasText: "false" }).waitFor())

        // The turn starts after the page opened: the inbox learns of the approval from the session's events.
        yield* transport.sendMessage(session.sessionId, "Where am I?")
        const approval = yield* waitOpen(transport, session.sessionId, "approval")
        const approvalItem = page.locator(`#inbox li[data-id="${approval.callback.id}"]`)
        yield* promise(() => approvalItem.waitFor({ timeout: 10_000 }))

        assert.strictEqual(yield* answerIn(page, approval.callback.id, "result"), "AnswerMismatch")
        yield* promise(() => page.locator("#answer-error", { hasText: "AnswerMismatch" }).waitFor())
        const stillOpen = yield* transport.listOpen()
        assert.isTrue(stillOpen.some((entry) => entry.callback.id === approval.callback.id), "nothing was stored")

        yield* promise(() => approvalItem.getByRole("button").click())
        const answeredHere = page.locator(`.callback[data-id="${approval.callback.id}"]`)
        yield* promise(() => answeredHere.and(page.locator("[data-resolution=answered]")).waitFor())
        assert.strictEqual(yield* promise(() => answeredHere.getAttribute("data-here")), "true")
        yield* promise(() => approvalItem.waitFor({ state: "detached" }))

        // The client tool's call, answered by another program: not here.
        const tool = yield* waitOpen(transport, session.sessionId, "client_tool")
        yield* promise(() => page.locator(`#inbox li[data-id="${tool.callback.id}"]`).waitFor({ timeout: 10_000 }))
        yield* transport.answer({
          sessionId: session.sessionId,
          turnId: tool.callback.turnId,
          callbackId: tool.callback.id,
          answer: Answer.ClientToolResult.success({ city: "Paris" })
        })
        const elsewhere = page.locator(`.callback[data-id="${tool.callback.id}"][data-resolution=answered]`)
        yield* promise(() => elsewhere.waitFor())
        assert.strictEqual(yield* promise(() => elsewhere.getAttribute("data-here")), "false")
        const late = yield* answerIn(page, tool.callback.id, "result")
        assert.include(["CallbackAlreadyAnswered", "not in the inbox"], late)
        if (late === "CallbackAlreadyAnswered") {
          yield* promise(() => page.locator("#answer-error", { hasText: "CallbackAlreadyAnswered" }).waitFor())
        }

        yield* promise(() => page.locator(".turn[data-state=completed]").waitFor())
        yield* promise(() =>
          page.locator(".message[data-streaming=false]", { hasText: "You are in {\"city\":\"Paris\"}" }).waitFor()
        )
        const stored = Array.from(yield* storedSeqs(transport, session.sessionId))
        yield* promise(() => page.locator(`#events li[data-seq="${stored[stored.length - 1]}"]`).waitFor())
        assert.deepStrictEqual(yield* shownSeqs(page), stored, "every stored event once, in order")
        yield* promise(() => page.locator("#inbox li").first().waitFor({ state: "detached" }))
      }),
    { timeout: 120_000 }
  )

  it.live(
    "the example app: the inbox's Allow and a client tool's result, the transcript to its final answer",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const browser = yield* Fixture.browser("example")
        const session = yield* transport.createSession(Fixture.locator.spec)
        yield* transport.sendMessage(session.sessionId, "Where am I?")
        const page = yield* promise(() => browser.newPage())
        yield* promise(() => page.goto(`${server.url}/react-test?session=${session.sessionId}#key=${Fixture.key}`))
        assert.notInclude(page.url(), "#key=", "the key taken out of the address bar")
        yield* promise(() => page.getByRole("button", { name: "Allow" }).click())
        yield* promise(() => page.getByLabel("Result (JSON)").fill("{\"city\":\"Nice\"}"))
        yield* promise(() => page.getByRole("button", { name: "Send result" }).click())
        yield* promise(() =>
          page.getByText("You are in {\"city\":\"Nice\"}, as far as I can tell from here.").waitFor()
        )
        assert.strictEqual(yield* promise(() => page.getByText("approval: answered here").count()), 1)
        yield* promise(() => page.getByText("Nothing waits.").waitFor())
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a server restart: Unreachable while it is down, Connected again by itself, the events resumed with no gap",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const filename = path.join(dir, "sessions.db")
        const first = yield* Fixture.start(filename)
        const transport = yield* Fixture.transport(first.url)
        const browser = yield* Fixture.browser()
        const session = yield* transport.createSession(Fixture.locator.spec)
        yield* transport.sendMessage(session.sessionId, "Where am I?")
        const approval = yield* waitOpen(transport, session.sessionId, "approval")
        const page = yield* Fixture.openPage(browser, first.url, session.sessionId)
        yield* promise(() => page.locator(".turn[data-state=blocked]").waitFor())
        const before = yield* shownSeqs(page)

        yield* first.stop
        yield* promise(() => page.locator("#connection", { hasText: "Unreachable" }).waitFor({ timeout: 20_000 }))
        const second = yield* Fixture.start(filename, first.port)
        yield* promise(() => page.locator("#connection", { hasText: "Connected" }).waitFor({ timeout: 20_000 }))

        const again = yield* Fixture.transport(second.url)
        yield* again.answer({
          sessionId: session.sessionId,
          turnId: approval.callback.turnId,
          callbackId: approval.callback.id,
          answer: new Answer.AllowApproval()
        }).pipe(Effect.retry({
          times: 5,
          schedule: Schedule.spaced("200 millis"),
          while: (error) => error._tag === "TransportFailure"
        }))
        const tool = yield* waitOpen(again, session.sessionId, "client_tool")
        yield* promise(() => page.locator(`#inbox li[data-id="${tool.callback.id}"]`).waitFor({ timeout: 10_000 }))
        assert.strictEqual(yield* answerIn(page, tool.callback.id, "result"), "answered", "answered from the page")
        yield* promise(() => page.locator(".turn[data-state=completed]").waitFor())

        const stored = Array.from(yield* storedSeqs(again, session.sessionId))
        yield* promise(() => page.locator(`#events li[data-seq="${stored[stored.length - 1]}"]`).waitFor())
        const after = yield* shownSeqs(page)
        assert.deepStrictEqual(after, stored, "no gap, no duplicate across the restart")
        assert.deepStrictEqual(after.slice(0, before.length), before)
      }),
    { timeout: 120_000 }
  )
})
