/**
 * The session app where it is hard to get right, in headless Chromium against a real server: two tabs on one session
 * both clicking Allow on each of a hundred approvals — the tab whose answer the server took (its POST answered 204)
 * says "answered here", the other "answered elsewhere", in 100 of 100; the server stopped (the banner shows, Allow
 * says it was not sent) and started again on the same port and file (the banner goes by itself, the open card is
 * answered, the turn ends); and axe-core's WCAG 2.1 A/AA check, in light and dark, with no serious or critical
 * violation on the picker and on a session with an open card.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import type { Page } from "playwright-core"
import * as App from "./fixtures/appServer.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The statuses of the answer POSTs a page sent, by callback id. */
const answerStatuses = (page: Page) => {
  const statuses = new Map<string, number>()
  page.on("response", (response) => {
    const match = /\/callbacks\/([^/]+)\/answer/.exec(response.url())
    if (match !== null && response.request().method() === "POST") statuses.set(match[1], response.status())
  })
  return statuses
}

describe("session app: two tabs, a server down, accessibility", { concurrent: false }, () => {
  it.live(
    `two tabs click Allow on each of ${App.repeats} approvals: "answered here" only in the tab whose answer won`,
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const browser = yield* App.browser
        const first = yield* App.openApp(browser, url)
        const sessionId = yield* App.startTurn(first, "repeater", "Deploy everything")
        const second = yield* App.openApp(browser, url, `#/sessions/${sessionId}`)
        const tabs = [first, second] as const
        const statuses = tabs.map(answerStatuses)
        let right = 0
        const wrong: Array<string> = []
        for (let n = 1; n <= App.repeats; n++) {
          const cards = tabs.map((tab) => tab.locator("article.action.open"))
          yield* promise(() =>
            Promise.all(cards.map((card) => card.waitFor({ timeout: 30_000 }))).catch(async (error: unknown) => {
              await first.screenshot({ path: path.join(App.screenshots, "two-tabs-stuck.png"), fullPage: true })
              const ends = await first.locator(".turn").last().innerText()
              throw new Error(
                `approval ${n}: no open card in both tabs (${String(error)}); the turn: ${ends.slice(-600)}`
              )
            })
          )
          const id = yield* promise(() => cards[0].getAttribute("data-callback-id"))
          assert.strictEqual(yield* promise(() => cards[1].getAttribute("data-callback-id")), id, "the same card")
          // both at once: one answer wins, the other is CallbackAlreadyAnswered (or finds the card resolved)
          // each tab clicks this card's Allow (a real click event, at once: no wait for a button already gone)
          yield* promise(() =>
            Promise.all(tabs.map((tab) =>
              tab.evaluate(
                (callbackId) =>
                  (globalThis as unknown as {
                    document: { querySelector: (selector: string) => { click: () => void } | null }
                  }).document.querySelector(`article.action.open[data-callback-id="${callbackId}"] button.allow`)
                    ?.click(),
                id
              )
            ))
          )
          const resolved = tabs.map((tab) => tab.locator(`article.action[data-callback-id="${id}"] .resolution`))
          const labels = yield* promise(() =>
            Promise.all(resolved.map(async (line) => {
              await line.waitFor({ timeout: 30_000 })
              return line.getAttribute("data-where")
            }))
          )
          const winners = statuses.map((byId) => byId.get(id ?? "") === 204)
          const expected = winners.map((won) => (won ? "here" : "elsewhere"))
          if (winners.filter(Boolean).length === 1 && labels[0] === expected[0] && labels[1] === expected[1]) right++
          else wrong.push(`${n}: ${JSON.stringify({ winners, labels })}`)
        }
        yield* promise(() =>
          first.locator(".message.assistant[data-streaming=false]", { hasText: `Deployed ${App.repeats} services.` })
            .waitFor({ timeout: 30_000 })
        )
        assert.deepStrictEqual(wrong, [])
        assert.strictEqual(right, App.repeats)
      }),
    { timeout: 600_000 }
  )

  it.live(
    "the server down: the banner shows and Allow says it was not sent; started again: the banner goes, Allow works",
    () =>
      Effect.gen(function*() {
        const dir = yield* App.tempDir
        const filename = path.join(dir, "sessions.db")
        const server = yield* App.serve(filename)
        const page = yield* App.openApp(yield* App.browser, server.url)
        yield* App.startTurn(page, "deployer", "Deploy the api")
        const card = App.card(page, "approval client.deploy")
        yield* promise(() => card.waitFor())
        const banner = page.getByText("The server is unreachable.")
        assert.isTrue(yield* promise(() => banner.isHidden()))

        yield* server.stop
        yield* promise(() => banner.waitFor({ timeout: 30_000 }))
        yield* App.screenshot(page, "down")
        yield* promise(() => card.getByRole("button", { name: "Allow" }).click())
        yield* promise(() =>
          card.getByRole("alert").filter({ hasText: "The server is unreachable: nothing was sent." }).waitFor()
        )
        assert.strictEqual(yield* promise(() => card.getAttribute("data-resolution")), "open")

        yield* App.serve(filename, server.port)
        yield* promise(() => banner.waitFor({ state: "detached", timeout: 30_000 }))
        yield* promise(() => card.getByRole("button", { name: "Allow" }).click())
        yield* promise(() =>
          page.locator(".message.assistant[data-streaming=false]", { hasText: "Deployed the api." })
            .waitFor({ timeout: 30_000 })
        )
        assert.strictEqual(yield* promise(() => card.locator(".resolution").innerText()), "Allowed · answered here")
        assert.strictEqual(yield* promise(() => page.locator(".turn").count()), 1, "one turn across the restart")
      }),
    { timeout: 180_000 }
  )

  it.live(
    "axe-core: no serious or critical violation, light and dark, on the picker and a session with an open card",
    () =>
      Effect.gen(function*() {
        const url = yield* App.start
        const page = yield* App.openApp(yield* App.browser, url)
        yield* promise(() => page.getByRole("button", { name: "Deploy the api" }).waitFor())
        const found: Array<string> = []
        const check = (where: string) =>
          Effect.gen(function*() {
            for (const violation of yield* App.axe(page)) {
              found.push(
                `${where}: ${violation.id} (${violation.impact}) ${violation.help} — ${violation.nodes.join(", ")}`
              )
            }
          })
        const theme = () => promise(() => page.evaluate<string>("document.documentElement.dataset.theme ?? ''"))
        assert.strictEqual(yield* theme(), "light", "the system's (light) at first")
        yield* check("picker, light")
        yield* promise(() => page.getByRole("button", { name: "Use the dark theme" }).click())
        assert.strictEqual(yield* theme(), "dark")
        yield* check("picker, dark")
        yield* App.startTurn(page, "deployer", "Deploy the api")
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        yield* check("session, dark")
        yield* App.screenshot(page, "dark")
        yield* promise(() => page.getByRole("button", { name: "Use the light theme" }).click())
        yield* check("session, light")
        // the choice is kept: a reload stays light; prefers-color-scheme: dark is followed until a choice is made
        yield* promise(() => page.reload())
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        assert.strictEqual(yield* theme(), "light")
        yield* promise(() => page.evaluate("localStorage.removeItem('parley.theme')"))
        yield* promise(() => page.emulateMedia({ colorScheme: "dark" }))
        yield* promise(() => page.reload())
        yield* promise(() => App.card(page, "approval client.deploy").waitFor())
        assert.strictEqual(yield* theme(), "dark", "the system's dark")
        assert.deepStrictEqual(found, [])
      }),
    { timeout: 180_000 }
  )
})
