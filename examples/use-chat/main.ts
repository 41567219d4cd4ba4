/**
 * Use Parley with useChat (docs/guides/use-chat.md), offline: a Parley server on 127.0.0.1:8787 serves the locator
 * agent, and a page of `useChat` (`page/main.ts`, bundled with esbuild) is served at http://127.0.0.1:3000, which
 * passes the AI SDK's requests (`/ai-sdk/…`) on to the server. Open http://127.0.0.1:3000/new: it starts a session
 * and opens the chat on it. Approve `get_location`, share a city, read the answer; answer from another terminal
 * (`PARLEY_URL=http://127.0.0.1:8787 PARLEY_API_KEY=use-chat-example-key npx parley callbacks`, then
 * `npx parley answer <id> allow`) and the page follows.
 *
 * Run it: `npx tsx --conditions=@parley/source examples/use-chat/main.ts` (Ctrl-C stops it).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Console, Effect, Layer, Redacted } from "effect"
import * as http from "node:http"
import * as path from "node:path"
import { isEntry } from "../shared/entry.js"
import { brain, locator } from "../shared/locator.js"

const key = "use-chat-example-key"
const parley = "http://127.0.0.1:8787"

interface Esbuild {
  readonly build: (options: object) => Promise<{ readonly outputFiles: ReadonlyArray<{ readonly text: string }> }>
}

/** The chat page, bundled (React, `@ai-sdk/react`, `ai`) into one module. */
const bundle = Effect.promise(async () => {
  const esbuild = (await import("esbuild")) as unknown as Esbuild
  const result = await esbuild.build({
    entryPoints: [path.join(import.meta.dirname, "page", "main.ts")],
    bundle: true,
    write: false,
    format: "esm",
    target: "es2022",
    define: { "process.env.NODE_ENV": "\"production\"" }
  })
  return result.outputFiles[0].text
})

const html = "<!doctype html><html><head><title>Parley · useChat</title></head><body><div id=\"root\"></div>" +
  "<script type=\"module\" src=\"/page.js\"></script></body></html>"

/**
 * The page's host: `/` and `/page.js`, `/new` (a session of the agent, then the chat on it), and everything else
 * passed on to the Parley server as it comes (the UI message stream streams through).
 */
const host = (js: string) =>
  http.createServer(async (request, response) => {
    if (request.url === "/page.js") return response.writeHead(200, { "content-type": "text/javascript" }).end(js)
    if (request.url === "/new") {
      const created = await fetch(`${parley}/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "locator" })
      }).then((reply) => reply.json() as Promise<{ sessionId: string }>)
      return response.writeHead(302, { location: `/#session=${created.sessionId}&key=${key}&agent=locator` }).end()
    }
    if (request.url === "/" || request.url?.startsWith("/#")) {
      return response.writeHead(200, { "content-type": "text/html" }).end(html)
    }
    const chunks: Array<Buffer> = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const upstream = await fetch(`${parley}${request.url}`, {
      method: request.method,
      headers: Object.fromEntries(
        Object.entries(request.headers).flatMap(([name, value]) =>
          typeof value === "string" && name !== "host" ? [[name, value]] : []
        )
      ),
      ...(chunks.length === 0 ? {} : { body: Buffer.concat(chunks) })
    })
    response.writeHead(upstream.status, Object.fromEntries(upstream.headers))
    if (upstream.body === null) return response.end()
    for await (const chunk of upstream.body) response.write(chunk)
    response.end()
  })

export const program = Effect.gen(function*() {
  const scripted = yield* ScriptedModel.fromFunction(brain)
  yield* Layer.build(ParleyServer.layerSqlite({
    filename: ":memory:",
    port: 8787,
    keys: [{ key: Redacted.make(key), tenant: "me" }],
    models: Models.single(scripted.languageModel),
    agents: [locator.spec],
    log: false
  }))
  const page = host(yield* bundle)
  yield* Effect.acquireRelease(
    Effect.callback<void>((resume) => void page.listen(3000, "127.0.0.1", () => resume(Effect.void))),
    () => Effect.sync(() => page.close())
  )
  yield* Console.log("the chat: http://127.0.0.1:3000/new (Ctrl-C stops it)")
  return yield* Effect.never
}).pipe(Effect.scoped)

if (isEntry(import.meta.url)) NodeRuntime.runMain(program)
