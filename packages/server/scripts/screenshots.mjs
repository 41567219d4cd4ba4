// Takes the session app's screenshots for docs/guides/session-app.md and the README (docs/images/), with Playwright
// and Debian's Chromium, against a running `npm start` (its demo agents):
//   node packages/server/scripts/screenshots.mjs http://127.0.0.1:8787 "$(cat .parley/api-key)"
// Desktop (1280x800) and phone (390x844): the agent picker, a session of `assistant` with its approval and sign-in
// cards open, the same in the dark theme, and `shop`'s subagents with their approvals in nested threads.
import * as fs from "node:fs"
import process from "node:process"
import { URL } from "node:url"
import { chromium } from "playwright-core"

const [base = "http://127.0.0.1:8787", key = process.env.PARLEY_API_KEY ?? ""] = process.argv.slice(2)
if (key === "") {
  process.stderr.write("usage: node packages/server/scripts/screenshots.mjs <url> <api key>\n")
  process.exit(2)
}
const out = new URL("../../../docs/images/", import.meta.url)
fs.mkdirSync(out, { recursive: true })
const file = (name) => new URL(name, out).pathname

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync"
  ]
})
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" })
const page = await context.newPage()

const startWith = async (agent, prompt) => {
  await page.goto(`${base}/#/`)
  const card = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: agent, exact: true }) })
  await card.getByRole("button", { name: prompt }).click()
  await page.waitForURL(/#\/sessions\/ses_/)
  return page.url()
}

await page.goto(`${base}/#key=${key}`)
await page.getByRole("heading", { name: "Start a session" }).waitFor()
await page.getByRole("heading", { name: "assistant", exact: true }).waitFor()
await page.screenshot({ path: file("session-app-picker.png") })

const assistant = await startWith("assistant", "Where am I, and what is my latest email about?")
await page.locator("article.action.open").nth(1).waitFor()
await page.waitForTimeout(500)
await page.screenshot({ path: file("session-app.png") })
await page.getByRole("button", { name: "Use the dark theme" }).click()
await page.waitForTimeout(300)
await page.screenshot({ path: file("session-app-dark.png") })
await page.getByRole("button", { name: "Use the light theme" }).click()

const shop = await startWith("shop", "What do the Atlas and the Nova cost?")
for (let i = 0; i < 2; i++) {
  const spawn = page.locator("article.action.open[aria-label='approval agents.spawn']").first()
  await spawn.waitFor()
  await spawn.getByRole("button", { name: "Allow" }).click()
  await page.waitForTimeout(300)
}
await page.locator(".subagent article.action.open").first().waitFor()
await page.waitForTimeout(500)
await page.screenshot({ path: file("session-app-subagents.png") })

await page.setViewportSize({ width: 390, height: 844 })
await page.goto(`${base}/#/`)
await page.getByRole("heading", { name: "assistant", exact: true }).waitFor()
await page.screenshot({ path: file("session-app-phone-picker.png") })
await page.goto(assistant)
await page.locator("article.action.open").first().waitFor()
await page.locator("article.action.open").first().scrollIntoViewIfNeeded()
await page.waitForTimeout(500)
await page.screenshot({ path: file("session-app-phone.png") })

process.stdout.write(`screenshots of ${assistant} and ${shop} in ${out.pathname}\n`)
await browser.close()
