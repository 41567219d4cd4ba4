/**
 * `npm run serve`: a Parley server for the guides' agents, on this machine.
 *
 * - `PARLEY_PORT` (default 8787), on `PARLEY_HOST` (default 127.0.0.1).
 * - Sessions in `.parley/sessions.db` at the repository root; `PARLEY_DATA_DIR` moves the `.parley/` folder;
 *   `PARLEY_DATABASE_URL=postgres://…` keeps them in PostgreSQL instead (several servers may share it).
 * - `PARLEY_API_KEYS=key:tenant,key2:tenant2`; when none is set, one local key is created, kept in
 *   `.parley/api-key` (mode 0600) and printed at start.
 * - Models: the agents' real models (`@parley/mistral`) when `MISTRAL_API_KEY` is set, the guides' scripted brains
 *   otherwise; the demo `gmail` mailbox as connector.
 * - Logs: one line per request, logfmt (`PARLEY_LOG_FORMAT=json` for JSON).
 * - SIGINT / SIGTERM: the event streams close (clients resume by cursor), in-flight appends finish, leases are
 *   released; open callbacks stay open for the next start.
 */
import { FetchHttpClient, HttpServer } from "@effect/platform"
import { NodeRuntime } from "@effect/platform-node"
import { MistralModels } from "@parley/mistral"
import { Connectors, Models } from "@parley/runtime"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Console, Effect, Layer, Logger, Record } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as CallbacksBrain from "./callbacks/brain.js"
import * as ApprovalsBrain from "./subagent-approvals/brain.js"

const env = process.env
const dataDir = env.PARLEY_DATA_DIR ?? path.resolve(import.meta.dirname, "..", ".parley")

/** The keys: `PARLEY_API_KEYS`, or the local key (created once, mode 0600). */
const apiKeys = Effect.sync(() => {
  const given = env.PARLEY_API_KEYS ?? ""
  if (given.trim() !== "") return { keys: ParleyServer.parseKeys(given), local: undefined }
  fs.mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, "api-key")
  if (!fs.existsSync(file)) {
    fs.writeFileSync(file, `parley_${crypto.randomBytes(24).toString("base64url")}\n`, { mode: 0o600 })
  }
  const key = fs.readFileSync(file, "utf8").trim()
  return { keys: ParleyServer.parseKeys(`${key}:local`), local: { key, file } }
})

/** The guides' agents by name, each on its scripted brain. */
const scriptedModels = Effect.map(
  Effect.all(Record.map({
    assistant: CallbacksBrain.make({
      signInDenied: "As for your latest email: the Gmail sign-in was denied, so I could not read your inbox."
    }),
    ...ApprovalsBrain.brains,
    ...ApprovalsBrain.opsBrains
  }, ScriptedModel.fromFunction)),
  (scripted) => Models.byAgent(Record.map(scripted, (model) => model.languageModel))
)

const live = (env.MISTRAL_API_KEY ?? "") !== ""

const models = live
  ? MistralModels.fromConfig().pipe(Effect.provide(FetchHttpClient.layer), Effect.orDie)
  : scriptedModels

const main = Effect.gen(function*() {
  const { keys, local } = yield* apiKeys
  const options: ParleyServer.RuntimeOptions = {
    keys,
    models: yield* models,
    connectors: [Connectors.demoMailbox()],
    port: Number(env.PARLEY_PORT ?? 8787),
    host: env.PARLEY_HOST ?? "127.0.0.1"
  }
  const databaseUrl = env.PARLEY_DATABASE_URL ?? ""
  const server = databaseUrl !== ""
    ? ParleyServer.layerPg({ ...options, url: databaseUrl })
    : Layer.unwrapEffect(Effect.sync(() => {
      fs.mkdirSync(dataDir, { recursive: true })
      return ParleyServer.layerSqlite({ ...options, filename: path.join(dataDir, "sessions.db") })
    }))
  const announce = Layer.effectDiscard(Effect.gen(function*() {
    const http = yield* HttpServer.HttpServer
    const url = http.address._tag === "TcpAddress" ? `http://${options.host}:${http.address.port}` : "?"
    yield* Console.log(
      `Parley server on ${url} (${databaseUrl !== "" ? "PostgreSQL" : path.join(dataDir, "sessions.db")})`
    )
    yield* Console.log(
      `  models: ${live ? "MISTRAL_API_KEY is set: the agents' real models" : "the guides' scripted brains"}`
    )
    yield* Console.log(`  API reference: ${url}/docs (OpenAPI: ${url}/openapi.json)`)
    if (local !== undefined) yield* Console.log(`  API key (kept in ${local.file}): ${local.key}`)
    else yield* Console.log(`  API keys: ${keys.length} from PARLEY_API_KEYS`)
  }))
  return yield* Layer.launch(announce.pipe(Layer.provide(server)))
})

const logger = env.PARLEY_LOG_FORMAT === "json" ? Logger.json : Logger.logFmt

NodeRuntime.runMain(main.pipe(Effect.provide(logger)), { disablePrettyLogger: true })
