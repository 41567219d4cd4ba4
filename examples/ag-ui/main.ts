/**
 * Use Parley with AG-UI (docs/guides/ag-ui.md), offline: a Parley server on a free port of 127.0.0.1 serves the
 * locator agent; `@ag-ui/client`'s `HttpAgent` runs it at `/ag-ui/locator` on a Parley session (the thread). The run
 * stops on an interrupt (the approval), a second run resumes it, a third answers the client tool's interrupt with
 * the tool's result, and the turn completes.
 *
 * Run it: `npx tsx --conditions=@parley/source examples/ag-ui/main.ts`
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import { NodeRuntime } from "@effect/platform-node"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Console, Context, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { isEntry } from "../shared/entry.js"
import { brain, locator } from "../shared/locator.js"

const key = "ag-ui-example-key"

/** The server on a temporary SQLite file and a free port: its URL. */
const server = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-ag-ui-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const scripted = yield* ScriptedModel.fromFunction(brain)
  const context = yield* Layer.build(ParleyServer.layerSqlite({
    filename: path.join(dir, "sessions.db"),
    port: 0,
    keys: [{ key: Redacted.make(key), tenant: "me" }],
    models: Models.single(scripted.languageModel),
    agents: [locator.spec],
    log: false
  }))
  const address = Context.get(context, HttpServer.HttpServer).address
  return `http://127.0.0.1:${"port" in address ? address.port : 0}`
})

interface Interrupt {
  readonly id: string
  readonly reason: string
  readonly message?: string
}

/** One run of the agent: prints its events' types, and gives the interrupts it stopped on. */
const run = (agent: HttpAgent, parameters: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
  Effect.gen(function*() {
    const events: Array<BaseEvent> = []
    yield* Effect.promise(() => agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) }))
    yield* Console.log(`events: ${events.map((event) => event.type).join(" ")}`)
    const finished = events.find((event) => event.type === "RUN_FINISHED") as
      | { readonly outcome?: { readonly type: string; readonly interrupts?: ReadonlyArray<Interrupt> } }
      | undefined
    const interrupts = finished?.outcome?.interrupts ?? []
    for (const interrupt of interrupts) yield* Console.log(`interrupt: ${interrupt.reason}: ${interrupt.message}`)
    return interrupts
  })

export const program = Effect.gen(function*() {
  const url = yield* server
  // The thread is a Parley session of the agent (POST /sessions).
  const created = yield* Effect.promise(() =>
    fetch(`${url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "locator" })
    }).then((response) => response.json() as Promise<{ sessionId: string }>)
  )
  const agent = new HttpAgent({
    url: `${url}/ag-ui/locator`,
    headers: { authorization: `Bearer ${key}` },
    threadId: created.sessionId
  })
  agent.addMessage({ id: "m1", role: "user", content: "Where am I?" })
  const [approval] = yield* run(agent)
  const [toolCall] = yield* run(agent, {
    resume: [{ interruptId: approval.id, status: "resolved", payload: { approved: true } }]
  })
  yield* run(agent, { resume: [{ interruptId: toolCall.id, status: "resolved", payload: { city: "Lyon" } }] })
  const last = agent.messages.at(-1)
  yield* Console.log(`assistant: ${last?.role === "assistant" ? last.content : "(none)"}`)
}).pipe(Effect.scoped)

if (isEntry(import.meta.url)) NodeRuntime.runMain(program)
