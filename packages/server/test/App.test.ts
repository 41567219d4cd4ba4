/**
 * The session app in a real browser (headless Chromium, playwright-core) against a real server: (1) approve with a
 * click and see the final answer; (2) the CLI answers (`parley answer <id> allow`, a child process) and the button
 * disappears within a second, the page saying it was answered elsewhere; (5) keyboard only, with the agents list
 * answered late (no app before the key is entered, no "Start session" before the agents are listed); (3) a client
 * tool's form refuses an invalid value, shows the server's 422, then sends a valid result; a sign-in, Connect per
 * source; (4) a reload mid-turn shows every event once; (6) the link `npm start` prints (`/#key=…`) opens the app
 * without asking for the key, which a second tab does not ask for either. Each test saves a screenshot under
 * `test-output/app/`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"
import type { Page } from "playwright-core"
import * as App from "./fixtures/appServer.js"

const parleyBin = path.resolve(import.meta.dirname, "..", "..", "cli", "bin", "parley.js")

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The `seq`s the page shows, in order. */
const shownSeqs = (page: Page) =>
  promise(() =>
    page.locator("#events li[data-seq]").evaluateAll((items) =>
      items.map((item) => Number(item.getAttribute("data-seq")))
    )
  )

/** Waits for the turn's end and its final answer (the assistant's message). */
const finalAnswer = async (page: Page, text: string) => {
  await page.locator("#events li[data-tag=TurnEnded]").filter({ hasText: "Turn completed" }).waitFor()
  await page.locator("#events li.assistant").filter({ hasText: text }).waitFor()
}

/** Presses Tab until the focused element is the button `name` (at most 60 times). */
const tabTo = (page: Page, name: string) =>
  promise(async () => {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press("Tab")
      const focused = await page.evaluate<string>("document.activeElement?.textContent ?? ''")
      if (focused === name) return true
    }
    return false
  })

describe("session app", { concurrent: false }, () => {
  it.live(
    "(1) start a turn that asks for approval, click Allow, see the final answer",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const card = page.getByRole("article", { name: "approval client.deploy" })
        yield* promise(() => card.waitFor())
        assert.include(yield* promise(() => card.innerText()), "\"service\": \"api\"")
        assert.include(yield* promise(() => card.innerText()), "destructive", "its annotations")
        // the list view: what waits across the tenant's sessions
        yield* promise(() => page.locator("#waiting").getByText(/^approval client\.deploy · ses_/).waitFor())
        yield* App.screenshot(page, "1-approval")
        yield* promise(() => card.getByRole("button", { name: "Allow" }).click())
        yield* promise(() => finalAnswer(page, "Deployed the api."))
        yield* promise(() => card.waitFor({ state: "detached" }))
        assert.match(yield* promise(() => page.locator("#resolutions").innerText()), /answered here/)
        assert.include(yield* promise(() => page.locator("#events").innerText()), "← client.deploy {\"deployed\":true}")
        yield* App.screenshot(page, "1-final")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "(6) a send whose response is lost (the turn queued) is sent again with its request id: one turn",
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
        yield* promise(() => page.getByRole("article", { name: "approval client.deploy" }).waitFor())
        // The message box empties once a send was answered 202.
        yield* promise(() =>
          page.waitForFunction("document.querySelector('#message-input')?.value === ''", undefined, { timeout: 10_000 })
        )
        assert.strictEqual(bodies.length, 2, "sent twice")
        const ids = bodies.map((body) => (body as { readonly requestId?: string }).requestId)
        assert.isString(ids[0])
        assert.strictEqual(ids[1], ids[0], "with the same request id")
        assert.strictEqual(yield* promise(() => page.locator("#events li[data-tag=TurnQueued]").count()), 1)
      }),
    { timeout: 120_000 }
  )

  it.live(
    "(2) the CLI answers: the button disappears within a second and the page says it was answered elsewhere",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const card = page.locator("article.callback")
        yield* promise(() => card.waitFor())
        const id = yield* promise(() => card.getAttribute("data-callback-id"))
        assert.isString(id)
        const result = yield* Effect.callback<{ code: number | null; stderr: string }>((resume) => {
          const { NO_COLOR: _n, FORCE_COLOR: _f, ...env } = process.env
          ChildProcess.execFile(process.execPath, [parleyBin, "answer", id ?? "", "allow"], {
            env: { ...env, PARLEY_URL: url, PARLEY_API_KEY: App.key }
          }, (error, _stdout, stderr) =>
            resume(Effect.succeed({ code: error === null ? 0 : (error.code as number), stderr })))
        })
        assert.strictEqual(result.code, 0, result.stderr)
        const answeredAt = Date.now()
        yield* promise(() =>
          card.waitFor({ state: "detached", timeout: 1000 })
        )
        assert.isBelow(Date.now() - answeredAt, 1000)
        assert.match(
          yield* promise(() =>
            page.locator("#resolutions").innerText()
          ),
          /answered elsewhere/
        )
        yield* promise(() => finalAnswer(page, "Deployed the api."))
        yield* App.screenshot(page, "2-answered-elsewhere")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "(6) the link npm start prints (/#key=…) opens the app without asking, once per browser",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const browser = yield* App.browser
        const page = yield* promise(() => browser.newPage())
        yield* promise(() => page.goto(`${url}/#key=${App.key}`))
        yield* promise(() => page.getByRole("button", { name: "Start session" }).waitFor())
        assert.isTrue(yield* promise(() => page.getByLabel("API key").isHidden()), "no key asked for")
        assert.strictEqual(page.url(), `${url}/`, "the key taken out of the address bar")
        const second = yield* promise(() => browser.newPage())
        yield* promise(() => second.goto(url))
        yield* promise(() => second.getByRole("button", { name: "Start session" }).waitFor())
        assert.isTrue(yield* promise(() => second.getByLabel("API key").isHidden()), "a second tab: not asked again")
      }),
    { timeout: 120_000 }
  )

  it.live("(5) keyboard only: Tab to Allow and press Enter", () =>
    Effect.gen(function*() {
      const url = yield* App.start
      const browser = yield* App.browser
      // The agents list answered late (a loaded server): "Start session" must not be offered before the page has it.
      yield* promise(() =>
        browser.route("**/agents", async (route) => {
          await new Promise((resolve) => setTimeout(resolve, 500))
          await route.continue()
        })
      )
      const first = yield* promise(() => browser.newPage())
      yield* promise(() => first.goto(url))
      yield* promise(() => first.getByLabel("API key").waitFor())
      assert.isTrue(yield* promise(() => first.locator("#app").isHidden()), "no app before a key is entered")
      const page = yield* App.openApp(browser, url)
      assert.isTrue(yield* tabTo(page, "Start session"))
      assert.strictEqual(
        yield* promise(() => page.getByLabel("Agent").locator("option").count()),
        3,
        "the agents are listed when Start session can be reached"
      )
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => page.getByRole("heading", { name: /^Session ses_/ }).waitFor())
      yield* promise(() => page.locator("#message-input:focus").waitFor()) // the page moved the focus to the message
      yield* promise(() => page.keyboard.type("Deploy the api"))
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => page.locator("article.callback").waitFor())
      assert.isTrue(yield* tabTo(page, "Allow"), "Allow is reachable with Tab")
      yield* App.screenshot(page, "5-keyboard-focus")
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => finalAnswer(page, "Deployed the api."))
      yield* App.screenshot(page, "5-keyboard-final")
    }), { timeout: 120_000 })

  it.live(
    "(3) a client tool's form: an invalid value refused in the page, the server's 422 shown, a valid result sent",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url, 390) // a phone's width
        yield* App.startTurn(page, "surveyor", "Tell me about my city")
        const card = page.getByRole("article", { name: "client_tool client.survey" })
        yield* promise(() => card.waitFor())
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
        yield* App.screenshot(page, "3-refused")
        assert.strictEqual(yield* promise(() => page.locator("#events li[data-tag=CallbackResolved]").count()), 0)
        yield* promise(() => card.getByLabel("population", { exact: true }).fill("522250"))
        yield* promise(() => card.getByRole("button", { name: "Send result" }).click())
        // the page sends it; the server still disagrees (a 3-letter code): its 422 and reason are shown, nothing stored
        const refusal = card.getByRole("alert").filter({ hasText: "The server refused the answer (422)" })
        yield* promise(() => refusal.waitFor())
        assert.include(yield* promise(() => refusal.innerText()), "code")
        yield* App.screenshot(page, "3-server-422")
        assert.strictEqual(yield* promise(() => page.locator("#events li[data-tag=CallbackResolved]").count()), 0)
        yield* promise(() => card.getByLabel("code", { exact: true }).fill("LYS"))
        yield* promise(() => card.getByRole("button", { name: "Send result" }).click())
        yield* promise(() =>
          finalAnswer(
            page,
            "Noted: {\"city\":\"Lyon\",\"code\":\"LYS\",\"population\":522250,\"country\":\"France\",\"position\":{\"lat\":45.76,\"lon\":4.84},\"capital\":false}."
          )
        )
        const overflow = yield* promise(() =>
          page.evaluate<boolean>("document.documentElement.scrollWidth > window.innerWidth")
        )
        assert.isFalse(overflow, "the layout holds at a phone's width")
        yield* App.screenshot(page, "3-sent")
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
        const card = page.getByRole("article", { name: "sign_in gmail" })
        yield* promise(() => card.waitFor())
        yield* promise(() => card.getByRole("button", { name: "Send" }).click())
        assert.strictEqual(
          yield* promise(() => card.getByRole("alert").innerText()),
          "Not sent: choose Connect or Deny for every source."
        )
        yield* promise(() => card.getByRole("group", { name: "gmail" }).getByLabel("Connect").check())
        yield* App.screenshot(page, "sign-in")
        yield* promise(() => card.getByRole("button", { name: "Send" }).click())
        yield* promise(() => finalAnswer(page, "Your latest email is about lunch."))
        assert.include(yield* promise(() => page.locator("#events").innerText()), "(SignInAnswer)")
      }),
    { timeout: 120_000 }
  )

  it.live("(4) a reload mid-turn shows the same events, once each", () =>
    Effect.gen(function*() {
      const url = yield* App.start
      const page = yield* App.openApp(yield* App.browser, url)
      yield* App.startTurn(page, "deployer", "Deploy the api")
      yield* promise(() => page.locator("article.callback").waitFor())
      yield* promise(() => page.locator("#events li[data-tag=TurnBlocked]").waitFor())
      const before = yield* shownSeqs(page)
      yield* promise(() => page.reload())
      yield* promise(() => page.locator("article.callback").waitFor())
      yield* promise(() => page.locator("#events li[data-tag=TurnBlocked]").waitFor())
      const after = yield* shownSeqs(page)
      assert.deepStrictEqual(after, before, "the same events after the reload")
      assert.deepStrictEqual(after, after.map((_, index) => index), "each once, none missing")
      yield* App.screenshot(page, "4-reloaded")
      yield* promise(() => page.getByRole("button", { name: "Allow" }).click())
      yield* promise(() => finalAnswer(page, "Deployed the api."))
      const final = yield* shownSeqs(page)
      assert.deepStrictEqual(final, final.map((_, index) => index))
    }), { timeout: 120_000 })
})
