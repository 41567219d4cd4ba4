/**
 * `useChat` of `@ai-sdk/react` in a real page (examples/use-chat/page, bundled with esbuild) in headless Chromium,
 * against a real server on 127.0.0.1 (issue 39): send, approve, deny, answer a client tool, reload mid-turn, and a
 * turn answered from the CLI (`parley answer`, a child process) that completes in the page. The page is served at
 * the server's origin by the browser (`page.route`); every API request goes to the server.
 */
import { assert, describe, it } from "@effect/vitest"
import { ScriptedModel } from "@parley/testing"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { brain, locator } from "./fixtures/agents.js"
import * as App from "./fixtures/appServer.js"
import { request } from "./fixtures/http.js"
import { keys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const pageSource = path.resolve(import.meta.dirname, "..", "..", "..", "examples", "use-chat", "page", "main.ts")
const parleyBin = path.resolve(import.meta.dirname, "..", "..", "cli", "bin", "parley.js")

interface Esbuild {
  readonly build: (options: object) => Promise<{ readonly outputFiles: ReadonlyArray<{ readonly text: string }> }>
}

const bundle = Effect.promise(async () => {
  const esbuild = (await import("esbuild")) as unknown as Esbuild
  const result = await esbuild.build({
    entryPoints: [pageSource],
    bundle: true,
    write: false,
    format: "esm",
    target: "es2022",
    define: { "process.env.NODE_ENV": "\"production\"" }
  })
  return result.outputFiles[0].text
})

const html = "<!doctype html><html><body><div id=\"root\"></div><script type=\"module\" src=\"/use-chat/page.js\">" +
  "</script></body></html>"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A server, a session of the locator agent, and the page open on it. */
const open = Effect.gen(function*() {
  const model = yield* ScriptedModel.fromFunction(brain)
  const base = yield* startServer(sqliteDatabase(yield* sqliteFile), model.languageModel, {
    runtimeTools: [],
    server: { agents: [locator.spec] }
  })
  const sessionId =
    ((yield* request(`${base}/sessions`, { method: "POST", key: keys.alice, body: { name: "locator" } }))
      .json as { sessionId: string }).sessionId
  const js = yield* bundle
  const browser = yield* App.browser
  const page = yield* promise(() => browser.newPage())
  yield* promise(() =>
    page.route(`${base}/use-chat/**`, (route) =>
      route.fulfill(
        route.request().url().endsWith(".js")
          ? { contentType: "text/javascript", body: js }
          : { contentType: "text/html", body: html }
      ))
  )
  const url = `${base}/use-chat/#session=${sessionId}&key=${keys.alice}&agent=locator`
  yield* promise(() => page.goto(url))
  return { base, sessionId, page, url }
})

const send = (page: Page, text: string) =>
  promise(async () => {
    await page.getByLabel("message").fill(text)
    await page.getByRole("button", { name: "Send" }).click()
  })

const toolState = (page: Page, state: string) => page.locator(`.tool[data-state="${state}"]`)

const assistantText = (page: Page, text: string) =>
  promise(() => page.locator("article.assistant p.text").filter({ hasText: text }).waitFor({ timeout: 30_000 }))

const parley = (base: string, args: ReadonlyArray<string>) =>
  Effect.callback<{ code: number | null; stderr: string }>((resume) => {
    const { NO_COLOR: _n, FORCE_COLOR: _f, ...env } = process.env
    ChildProcess.execFile(
      process.execPath,
      [parleyBin, ...args],
      {
        env: { ...env, PARLEY_URL: base, PARLEY_API_KEY: keys.alice }
      },
      (error, _stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : (error.code as number), stderr }))
    )
  })

const openCallbackOf = (base: string, sessionId: string, kind: string) =>
  Effect.map(
    request(`${base}/callbacks?sessionId=${sessionId}&kind=${kind}`, { key: keys.alice }),
    (reply) => (reply.json as Array<{ callback: { id: string } }>)[0]?.callback.id
  )

describe("useChat in Chromium", { concurrent: false }, () => {
  it.live("send, approve, answer the client tool: the answer shows", () =>
    Effect.gen(function*() {
      const { page } = yield* open
      yield* send(page, "Where am I?")
      yield* promise(() => page.getByRole("button", { name: "Approve" }).click())
      yield* promise(() => page.getByRole("button", { name: "Share location" }).click())
      yield* assistantText(page, "You are in Lyon.")
      assert.include(yield* promise(() => page.locator(".tool pre.output").innerText()), "Lyon")
      yield* App.screenshot(page, "use-chat-1-approved")
    }), { timeout: 120_000 })

  it.live("deny: the tool part is denied and the turn ends", () =>
    Effect.gen(function*() {
      const { base, page, sessionId } = yield* open
      yield* send(page, "Where am I?")
      yield* promise(() => page.getByRole("button", { name: "Deny" }).click())
      yield* promise(() => toolState(page, "output-denied").waitFor({ timeout: 30_000 }))
      yield* promise(() => page.locator("main[data-status=ready]").waitFor())
      const events = yield* request(`${base}/sessions/${sessionId}/events?live=false`, { key: keys.alice })
      assert.match(events.text, /"DenyApproval","reason":"not today"/)
      assert.match(events.text, /event: TurnEnded/)
    }), { timeout: 120_000 })

  it.live(
    "reload mid-turn: the page resumes the waiting turn, and the approval in it completes the turn",
    () =>
      Effect.gen(function*() {
        const { page } = yield* open
        yield* send(page, "Where am I?")
        yield* promise(() => page.getByRole("button", { name: "Approve" }).waitFor())
        yield* promise(() => page.reload())
        // Nothing of the chat is kept in the page: what shows comes from the resumed stream.
        yield* promise(() => page.getByRole("button", { name: "Approve" }).click({ timeout: 30_000 }))
        yield* promise(() => page.getByRole("button", { name: "Share location" }).click({ timeout: 30_000 }))
        yield* assistantText(page, "You are in Lyon.")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "answered from the CLI: the page shows each answer and the turn completes in it",
    () =>
      Effect.gen(function*() {
        const { base, page, sessionId } = yield* open
        yield* send(page, "Where am I?")
        const approval = page.locator(".tool[data-state=approval-requested]")
        yield* promise(() => approval.waitFor())
        const approvalId = yield* promise(() => approval.getAttribute("data-approval-id"))
        assert.match(approvalId ?? "", /^cb_/)
        const allowed = yield* parley(base, ["answer", approvalId!, "allow"])
        assert.strictEqual(allowed.code, 0, allowed.stderr)
        yield* promise(() => toolState(page, "input-available").waitFor({ timeout: 30_000 }))
        const toolCall = yield* openCallbackOf(base, sessionId, "client_tool")
        assert.match(toolCall ?? "", /^cb_/)
        const result = yield* parley(base, ["answer", toolCall!, "--result", "{\"city\":\"Paris\"}"])
        assert.strictEqual(result.code, 0, result.stderr)
        yield* assistantText(page, "You are in Lyon.")
        assert.include(yield* promise(() => page.locator(".tool pre.output").innerText()), "Paris")
        yield* App.screenshot(page, "use-chat-2-cli")
      }),
    { timeout: 120_000 }
  )
})
