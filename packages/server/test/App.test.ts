/**
 * The session app (React on `@parley/react`) in a real browser (headless Chromium, playwright-core) against a real
 * server: send a message and Allow (the tool call's card with its arguments and result, the final answer streamed);
 * Deny with a reason; edited arguments and "remember" (the grant listed, then revoked); a client tool's form from its
 * schema (refused in the page, then by the server, then sent); a sign-in; a subagent's approval in its nested thread;
 * the CLI answering (the card says "answered elsewhere"); a reload keeping the open card and "answered here"; a
 * session's URL opened directly; the key link, once per browser; keyboard only; a lost send sent again with its
 * request id. Each test saves a screenshot under `test-output/app/`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"
import type { Page } from "playwright-core"
import * as App from "./fixtures/appServer.js"

const parleyBin = path.resolve(import.meta.dirname, "..", "..", "cli", "bin", "parley.js")

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Waits for the assistant's final message (streamed to its end). */
const finalAnswer = (page: Page, text: string) =>
  promise(() => page.locator(".message.assistant[data-streaming=false]").filter({ hasText: text }).waitFor())

/** Presses Tab until the focused element is the button `name` (at most 80 times). */
const tabTo = (page: Page, name: string) =>
  promise(async () => {
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press("Tab")
      const focused = await page.evaluate<string>("document.activeElement?.textContent ?? ''")
      if (focused === name) return true
    }
    return false
  })

const resolution = (card: ReturnType<typeof App.card>) => promise(() => card.locator(".resolution").innerText())

describe("session app", { concurrent: false }, () => {
  it.live(
    "send, Allow: the tool call's card with arguments and result, the final answer, answered here",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        // the picker: each agent's description and example prompts
        const deployer = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "deployer" }) })
        yield* promise(() => deployer.getByText("Deploys a service, once you allow it.").waitFor())
        yield* promise(() => deployer.getByRole("button", { name: "Deploy the api" }).click())
        const card = App.card(page, "approval client.deploy")
        yield* promise(() => card.waitFor())
        assert.include(yield* promise(() => card.getByLabel("Arguments").innerText()), "\"service\": \"api\"")
        assert.include(yield* promise(() => card.innerText()), "destructive", "its annotations")
        // the inbox: what waits across the key's sessions, with its count; the session listed with title and state
        yield* promise(() => page.locator(".inbox li", { hasText: "Approve deploy" }).waitFor())
        assert.strictEqual(yield* promise(() => page.locator("#inbox-title .count").innerText()), "1")
        const listed = page.locator(".sessions li", { hasText: "Deploy the api" })
        yield* promise(() => listed.getByText("1 waiting").waitFor())
        assert.include(yield* promise(() => listed.innerText()), "deployer")
        yield* App.screenshot(page, "1-approval")
        yield* promise(() => card.getByRole("button", { name: "Allow" }).click())
        yield* finalAnswer(page, "Deployed the api.")
        assert.strictEqual(yield* resolution(card), "Allowed · answered here")
        const tool = page.locator("details.tool[data-tool='client.deploy']")
        yield* promise(() => tool.locator("summary").click())
        assert.include(yield* promise(() => tool.innerText()), "\"deployed\": \"api\"", "the result, once opened")
        yield* promise(() => listed.getByText("done").waitFor({ timeout: 20_000 }))
        yield* promise(() => page.getByText("Nothing waits for an answer.").waitFor())
        yield* App.screenshot(page, "1-final")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "Deny with a reason: the model sees it; edited arguments and remember: the grant listed and revoked",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const card = App.card(page, "approval client.deploy")
        yield* promise(() => card.getByLabel("Reason (if you deny)").fill("not on a Friday"))
        yield* promise(() => card.getByRole("button", { name: "Deny" }).click())
        yield* promise(() => page.getByText("Not deployed:").waitFor())
        assert.strictEqual(yield* resolution(card), "Denied: “not on a Friday” · answered here")
        assert.include(yield* promise(() => page.locator(".message.assistant").last().innerText()), "not on a Friday")

        // edited arguments, remembered for the session
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const second = App.card(page, "approval client.deploy")
        yield* promise(() => second.getByRole("button", { name: "Edit arguments" }).click())
        yield* promise(() => second.getByLabel("Arguments (JSON)").fill("{\"service\": \"web\"}"))
        yield* promise(() => second.getByLabel("Remember").selectOption("session"))
        yield* promise(() => second.getByRole("button", { name: "Allow" }).click())
        yield* finalAnswer(page, "Deployed the api.")
        assert.strictEqual(
          yield* resolution(second),
          "Allowed with edited arguments · answered here · remembered for the session"
        )
        const tool = page.locator("details.tool[data-tool='client.deploy']")
        yield* promise(() => tool.locator("summary").click())
        assert.include(yield* promise(() => tool.innerText()), "\"deployed\": \"web\"", "ran with the edited arguments")
        const grant = page.locator(".grants li")
        yield* promise(() => grant.waitFor({ timeout: 20_000 }))
        assert.include(yield* promise(() => grant.innerText()), "client.deploy")
        yield* App.screenshot(page, "2-grant")
        yield* promise(() => grant.getByRole("button", { name: "Revoke allow client.deploy" }).click())
        yield* promise(() => grant.waitFor({ state: "detached", timeout: 20_000 }))
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a client tool's form from its schema: refused in the page, then by the server (its reason shown), then sent",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const browser = yield* App.browser
        const page = yield* App.openApp(browser, url)
        yield* promise(() => page.setViewportSize({ width: 390, height: 844 })) // a phone
        yield* App.startTurn(page, "surveyor", "Tell me about my city")
        const card = App.card(page, "client_tool client.survey")
        yield* promise(async () => {
          await card.getByLabel("city", { exact: true }).fill("Lyon")
          await card.getByLabel("code", { exact: true }).fill("LY")
          await card.getByLabel("population", { exact: true }).fill("many")
          await card.getByLabel("country", { exact: true }).selectOption("France")
          await card.getByLabel("lat", { exact: true }).fill("45.76")
          await card.getByLabel("lon", { exact: true }).fill("4.84")
        })
        yield* promise(() => card.getByRole("button", { name: "Send result" }).click())
        assert.strictEqual(
          yield* promise(() => card.getByRole("alert").innerText()),
          "Not sent: population must be a number."
        )
        yield* promise(() => card.getByLabel("population", { exact: true }).fill("522250"))
        yield* promise(() => card.getByRole("button", { name: "Send result" }).click())
        const refusal = card.getByRole("alert").filter({ hasText: "The server refused this answer" })
        yield* promise(() => refusal.waitFor())
        assert.include(yield* promise(() => refusal.innerText()), "code")
        assert.strictEqual(yield* promise(() => card.getAttribute("data-resolution")), "open", "nothing stored")
        yield* App.screenshot(page, "3-server-refused")
        yield* promise(() => card.getByLabel("code", { exact: true }).fill("LYS"))
        yield* promise(() => card.getByRole("button", { name: "Send result" }).click())
        yield* finalAnswer(
          page,
          "Noted: {\"city\":\"Lyon\",\"code\":\"LYS\",\"population\":522250,\"country\":\"France\",\"position\":{\"lat\":45.76,\"lon\":4.84},\"capital\":false}."
        )
        assert.strictEqual(yield* resolution(card), "Result sent · answered here")
        const overflow = yield* promise(() =>
          page.evaluate<boolean>("document.documentElement.scrollWidth > window.innerWidth")
        )
        assert.isFalse(overflow, "the layout holds at a phone's width")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "approvals of one tool waiting in two sessions: Allow all from the inbox, each card answered here",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        const first = yield* App.startTurn(page, "deployer", "Deploy the api")
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        const second = yield* App.startTurn(page, "deployer", "Deploy the api again")
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        const group = page.getByRole("group", { name: "All 2 approvals of deploy" })
        yield* promise(() => group.waitFor())
        yield* App.screenshot(page, "7-all-at-once")
        yield* promise(() => group.getByRole("button", { name: "Allow all 2" }).click())
        yield* promise(() =>
          page.getByRole("status").filter({ hasText: "Allowed 2 of 2 approvals of deploy" }).waitFor()
        )
        for (const sessionId of [first, second]) {
          yield* promise(() => page.goto(`${url}/#/sessions/${sessionId}`))
          yield* finalAnswer(page, "Deployed the api.")
          assert.strictEqual(yield* resolution(App.card(page, "approval client.deploy")), "Allowed · answered here")
        }
        yield* promise(() => page.getByText("Nothing waits for an answer.").waitFor())
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a sign-in: Connect or Deny per source, sent once every source is decided",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "reader", "What is my latest email about?")
        const card = App.card(page, "sign_in gmail")
        yield* promise(() => card.getByRole("button", { name: "Send" }).click())
        assert.strictEqual(
          yield* promise(() => card.getByRole("alert").innerText()),
          "Not sent: choose Connect or Deny for every source."
        )
        yield* promise(() => card.getByRole("group", { name: "gmail" }).getByLabel("Connect").check())
        yield* promise(() => card.getByRole("button", { name: "Send" }).click())
        yield* finalAnswer(page, "Your latest email is about lunch.")
        assert.strictEqual(yield* resolution(card), "Connected · answered here")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a subagent: its thread nested in the transcript, its approval answered there",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "lead", "Deploy the web service")
        const spawn = App.card(page, "approval agents.spawn")
        yield* promise(() => spawn.getByRole("button", { name: "Allow" }).click())
        const thread = page.getByRole("region", { name: "Subagent helper" })
        yield* promise(() => thread.getByText("Deploy the web service.").waitFor())
        const card = thread.locator("article.action[aria-label='approval client.deploy']")
        yield* promise(() => card.waitFor())
        assert.include(yield* promise(() => card.getByLabel("Arguments").innerText()), "\"service\": \"web\"")
        yield* App.screenshot(page, "5-subagent")
        yield* promise(() => card.getByRole("button", { name: "Allow" }).click())
        yield* promise(() =>
          thread.locator(".message.assistant[data-streaming=false]", { hasText: "The web service is deployed." })
            .waitFor()
        )
        assert.strictEqual(yield* resolution(card), "Allowed · answered here")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "the CLI answers: the card turns resolved and says answered elsewhere",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const card = App.card(page, "approval client.deploy")
        yield* promise(() => card.waitFor())
        const id = yield* promise(() => card.getAttribute("data-callback-id"))
        const result = yield* Effect.callback<{ code: number | null; stderr: string }>((resume) => {
          const { NO_COLOR: _n, FORCE_COLOR: _f, ...env } = process.env
          ChildProcess.execFile(process.execPath, [parleyBin, "answer", id ?? "", "allow"], {
            env: { ...env, PARLEY_URL: url, PARLEY_API_KEY: App.key }
          }, (error, _stdout, stderr) =>
            resume(Effect.succeed({ code: error === null ? 0 : (error.code as number), stderr })))
        })
        assert.strictEqual(result.code, 0, result.stderr)
        yield* promise(() =>
          card.and(page.locator("[data-resolution=answered]")).waitFor({ timeout: 10_000 })
        )
        assert.match(yield* resolution(card), /^Allowed · answered elsewhere/)
        yield* finalAnswer(page, "Deployed the api.")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "a reload keeps the open card, the answer made before it stays 'answered here'; a session's URL opens directly",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const browser = yield* App.browser
        const page = yield* App.openApp(browser, url)
        const sessionId = yield* App.startTurn(page, "surveyor", "Tell me about my city")
        yield* promise(() => App.card(page, "client_tool client.survey").waitFor())
        yield* promise(() => page.reload())
        const card = App.card(page, "client_tool client.survey")
        yield* promise(() => card.getByLabel("city", { exact: true }).waitFor())
        assert.strictEqual(yield* promise(() => page.locator("article.action").count()), 1, "one card, once")
        assert.strictEqual(yield* promise(() => page.locator(".turn").count()), 1, "one turn, once")
        yield* promise(async () => {
          await card.getByLabel("city", { exact: true }).fill("Lyon")
          await card.getByLabel("code", { exact: true }).fill("LYS")
          await card.getByLabel("population", { exact: true }).fill("1")
          await card.getByLabel("country", { exact: true }).selectOption("France")
          await card.getByLabel("lat", { exact: true }).fill("1")
          await card.getByLabel("lon", { exact: true }).fill("2")
          await card.getByRole("button", { name: "Send result" }).click()
        })
        yield* finalAnswer(page, "Noted:")
        yield* promise(() => page.reload())
        yield* finalAnswer(page, "Noted:")
        assert.strictEqual(yield* resolution(card), "Result sent · answered here", "after a reload too")

        // the session's URL in another tab: the same session, answered in the first tab (not this one)
        const other = yield* App.openApp(browser, url, `#/sessions/${sessionId}`)
        yield* finalAnswer(other, "Noted:")
        assert.strictEqual(
          yield* resolution(App.card(other, "client_tool client.survey")),
          "Result sent · answered elsewhere, by session app"
        )
        assert.strictEqual(yield* promise(() => other.locator("#session-title").innerText()), "Tell me about my city")
        // a URL of a session the key does not have
        const missing = yield* App.openApp(browser, url, "#/sessions/ses_00000000000000000000")
        yield* promise(() => missing.getByRole("heading", { name: "No such session" }).waitFor())
      }),
    { timeout: 120_000 }
  )

  it.live(
    "the link npm start prints (/#key=…) opens the app without asking, once per browser; a refused key is asked again",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const browser = yield* App.browser
        const page = yield* promise(() => browser.newPage())
        yield* promise(() => page.goto(`${url}/#key=${App.key}`))
        yield* promise(() => page.getByRole("navigation", { name: "Sessions" }).waitFor())
        assert.isTrue(yield* promise(() => page.getByLabel("API key").isHidden()), "no key asked for")
        assert.notInclude(page.url(), "key=", "the key taken out of the address bar")
        const second = yield* promise(() => browser.newPage())
        yield* promise(() => second.goto(url))
        yield* promise(() => second.getByRole("navigation", { name: "Sessions" }).waitFor())
        assert.isTrue(yield* promise(() => second.getByLabel("API key").isHidden()), "a second tab: not asked again")

        const other = yield* App.browser
        const wrong = yield* promise(() => other.newPage())
        yield* promise(() => wrong.goto(`${url}/#key=not-the-key`))
        yield* promise(() => wrong.getByText("The server refused this key.").waitFor())
        yield* promise(() => wrong.getByLabel("API key").fill(App.key))
        yield* promise(() => wrong.getByRole("button", { name: "Use this key" }).click())
        yield* promise(() => wrong.getByRole("navigation", { name: "Sessions" }).waitFor())
      }),
    { timeout: 120_000 }
  )

  it.live("keyboard only: Tab to a prompt, Enter; Tab to Allow, Enter", () =>
    Effect.gen(function*() {
      const url = yield* App.start
      const page = yield* App.openApp(yield* App.browser, url)
      yield* promise(() => page.getByRole("button", { name: "Deploy the api" }).waitFor())
      assert.isTrue(yield* tabTo(page, "Deploy the api"), "an example prompt is reachable with Tab")
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => App.card(page, "approval client.deploy").waitFor())
      assert.isTrue(yield* tabTo(page, "Allow"), "Allow is reachable with Tab")
      const outline = yield* promise(() =>
        page.evaluate<string>("getComputedStyle(document.activeElement).outlineStyle")
      )
      assert.strictEqual(outline, "solid", "the focus is visible")
      yield* promise(() => page.keyboard.press("Enter"))
      yield* finalAnswer(page, "Deployed the api.")
      // the message box: Enter sends
      yield* promise(() => page.getByLabel("Message").focus())
      yield* promise(() => page.keyboard.type("Deploy the api"))
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => page.locator(".turn").nth(1).waitFor())
    }), { timeout: 120_000 })

  it.live(
    "a send whose response is lost (the turn queued) is sent again with its request id: one turn",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        const bodies: Array<unknown> = []
        // The first send reaches the server, then its connection is reset: the page never reads the answer.
        yield* promise(() =>
          page.route("**/sessions/*/turns", async (route) => {
            if (route.request().method() !== "POST") return route.continue()
            bodies.push(route.request().postDataJSON())
            if (bodies.length > 1) return route.continue()
            await route.fetch()
            await route.abort("connectionreset")
          })
        )
        yield* App.startTurn(page, "deployer", "Deploy the api")
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        yield* promise(() => page.waitForFunction("document.querySelector('#message-input')?.value === ''"))
        assert.isAtLeast(bodies.length, 2, "sent again")
        const ids = bodies.map((body) => (body as { readonly requestId?: string }).requestId)
        assert.isString(ids[0])
        assert.deepStrictEqual(ids, ids.map(() => ids[0]), "with the same request id")
        assert.strictEqual(yield* promise(() => page.locator(".turn").count()), 1, "one turn")
      }),
    { timeout: 120_000 }
  )
})
