/**
 * The runtime every example runs on, picked in one place: which transport, which store, which connectors, which
 * models — and the narration of what happens.
 *
 * - `runtimeLayer(models)` is the seam: `SqlRuntime.layerSqlite` from `@parley/store-sql` (the in-process engine
 *   over the sessions' SQLite file), with the demo `gmail` mailbox as the only connector (a real MCP server on
 *   127.0.0.1, `mailServer.ts`), `models` resolving the
 *   model of each agent (the root and every subagent), and its `Transport` narrated (`narrate.ts`: a line per
 *   callback and per finished turn).
 * - The file is `.parley/sessions.db` at the repository root (the folder is created when missing), so what
 *   `npm run demo` ran stays on disk.
 *   `PARLEY_SESSIONS_DB` names another file (the examples test gives each run a temporary one; `:memory:` keeps
 *   them in memory).
 * - `offlineRuntime(brain)`: one scripted brain for every agent (`ScriptedModel.layerFunction`: every agent runs on
 *   the `LanguageModel` in context).
 * - `offlineRuntimeByAgent({ agentName: brain, ... })`: one scripted brain per agent name (`Models.byAgent`), for
 *   programs whose subagents think differently from their parent.
 * - When `MISTRAL_API_KEY` is set, both run every agent on the real model it names instead (`MistralModels` from
 *   `@parley/mistral`, over `fetch`): the programs stay the same, the model's words will differ from the guides'.
 * - With `PARLEY_EXAMPLES_TRANSPORT=http` the program drives its sessions over HTTP: a Parley server
 *   (`ParleyServer.layerSqlite`, on 127.0.0.1, the same file, models and connector) starts with the runtime, and the
 *   program's `Transport` is `HttpTransport.layer({ url, apiKey })` against it. The programs are unchanged, and
 *   print the same lines (the examples test checks it).
 */
import { MistralModels } from "@parley/mistral"
import type { Connectors } from "@parley/runtime"
import { Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { SqlRuntime } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Context, Effect, Layer, Record } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpServer } from "effect/http"
import * as fs from "node:fs"
import * as path from "node:path"
import * as MailServer from "./mailServer.js"
import * as Narrate from "./narrate.js"

/** A scripted brain: decides each model reply from the conversation so far. */
export type Brain = (call: ScriptedModel.Call) => ScriptedModel.Reply

/** The SQLite file the examples keep their sessions in: `.parley/sessions.db` at the repository root by default. */
export const sessionsFile = (env: { readonly [name: string]: string | undefined } = process.env): string =>
  env.PARLEY_SESSIONS_DB ?? path.resolve(import.meta.dirname, "..", "..", ".parley", "sessions.db")

/**
 * The engine over the sessions' SQLite file (its folder created when missing), with the demo `gmail` mailbox as the
 * only connector, and `models` (or, without them, the `LanguageModel` in context). A file that cannot be opened stops
 * the program.
 */
const local = (models: Models.Service) =>
  Layer.orDie(withGmail((gmail) => SqlRuntime.layerSqlite({ filename: sessionsFile(), connectors: [gmail], models })))

/** The same with every agent on the `LanguageModel` in context. */
const localOnContext = () =>
  Layer.orDie(withGmail((gmail) => SqlRuntime.layerSqlite({ filename: sessionsFile(), connectors: [gmail] })))

/** A layer made with the `gmail` connector: the mail MCP server (`mailServer.ts`) runs as long as the layer. */
const withGmail = <A, E, R>(make: (gmail: Connectors.Connector) => Layer.Layer<A, E, R>) =>
  Layer.unwrap(Effect.map(MailServer.gmail, make))

/** Whether the examples drive their sessions over HTTP (`PARLEY_EXAMPLES_TRANSPORT=http`). */
export const overHttp = process.env.PARLEY_EXAMPLES_TRANSPORT === "http"

/** The key of the examples' server: it listens on 127.0.0.1 only, for the program's run. */
const exampleKey = "examples-local-key"

/**
 * A Parley server on a free port of 127.0.0.1 over the sessions' file, with the demo mailbox and `models`, and the
 * HTTP transport against it: the same runtime, across HTTP.
 */
const overHttpLayer = (models: Models.Service) =>
  Layer.unwrap(Effect.gen(function*() {
    const filename = sessionsFile()
    if (filename !== ":memory:") fs.mkdirSync(path.dirname(filename), { recursive: true })
    const server = yield* Layer.build(ParleyServer.layerSqlite({
      filename,
      port: 0,
      keys: ParleyServer.parseKeys(`${exampleKey}:examples`),
      models,
      connectors: [yield* MailServer.gmail],
      // The program and its server are one party: the server runs the program's definitions.
      acceptDefinitions: true,
      log: false
    }))
    const address = Context.get(server, HttpServer.HttpServer).address
    const port = address._tag !== "UnixPathAddress" ? address.port : 0
    return HttpTransport.layer({ url: `http://127.0.0.1:${port}`, apiKey: exampleKey })
  }))

/**
 * The in-process runtime: `LocalTransport` over the sessions' SQLite file, the demo `gmail` mailbox as the only
 * connector, and `models` to resolve the model of every agent; narrated. (Over HTTP: see `overHttp`.)
 */
export const runtimeLayer = (models: Models.Service) => Narrate.layer(overHttp ? overHttpLayer(models) : local(models))

/** Whether the examples run on a real model: `MISTRAL_API_KEY` is set. */
export const live = (process.env.MISTRAL_API_KEY ?? "") !== ""

/** What the examples run on, for the first line they print. */
export const modelDescription = (model: string) =>
  live
    ? `live: ${MistralModels.describe(model)} (MISTRAL_API_KEY is set; the model's words will differ from the guides')`
    : "offline: the model is a scripted brain (ScriptedModel), no API key is used"

/** The real models, resolved by name from the agents' `model` (`mistral-*`, `openai-compat:<model>`). */
const liveRuntime = Layer.unwrap(
  Effect.map(MistralModels.fromConfig(), (models) => runtimeLayer(models))
).pipe(Layer.provide(FetchHttpClient.layer), Layer.orDie)

/** The offline runtime: one scripted brain as the model of every agent. */
export const offlineRuntime = (brain: Brain) =>
  live ? liveRuntime : overHttp
    ? Layer.unwrap(
      Effect.map(ScriptedModel.fromFunction(brain, { record: false }), (scripted) =>
        runtimeLayer(Models.single(scripted.languageModel)))
    )
    : Narrate.layer(localOnContext().pipe(Layer.provide(ScriptedModel.layerFunction(brain, { record: false }))))

/**
 * The offline runtime with one scripted brain per agent, by agent name: `{ shop: parentBrain, researcher: ... }`.
 * A session whose tree has an agent without a brain fails to start (`AgentInvalid`, naming the agents that have one).
 */
export const offlineRuntimeByAgent = (brains: { readonly [agentName: string]: Brain }) =>
  live ? liveRuntime : Layer.unwrap(
    Effect.map(
      Effect.all(Record.map(brains, (brain) => ScriptedModel.fromFunction(brain, { record: false }))),
      (scripted) => runtimeLayer(Models.byAgent(Record.map(scripted, (model) => model.languageModel)))
    )
  )
