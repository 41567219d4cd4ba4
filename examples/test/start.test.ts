/**
 * `npm start` is the product: the session server of `serve.ts` (what the root's `start` script runs, through the
 * examples' own `start` script), on a free port and a temporary data folder here. It prints the app's URL (the local
 * key in its fragment: one click opens the app), the local key (created in `<data dir>/api-key`, mode 0600) and the
 * `npx parley callbacks list` hint, serves the guides' agents, and stops on Ctrl-C. Then it is quiet: over turns
 * driven to their end and the polls of an open session app, it prints nothing more (a line per request only with
 * `PARLEY_LOG_LEVEL=info`). `npm run demo` is the narrated walkthrough (`main.ts`, checked by `examples.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Answer, Transport } from "@parley/core"
import type { AgentSpec } from "@parley/core"
import { HttpTransport } from "@parley/transport-http"
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import type { Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ApprovalsAgent from "../subagent-approvals/agent.js"

const examplesDir = path.resolve(import.meta.dirname, "..")
const repoDir = path.resolve(examplesDir, "..")
const tsx = path.resolve(repoDir, "node_modules", ".bin", "tsx")
const { MISTRAL_API_KEY: _apiKey, PARLEY_API_KEYS: _keys, ...offlineEnv } = process.env

const scripts = (file: string) =>
  (JSON.parse(fs.readFileSync(file, "utf8")) as { scripts: Record<string, string> }).scripts

/** `serve.ts` in a process of its own with `env`, on a free port and a temporary data folder; killed with the scope. */
const startServer = (env: { readonly [name: string]: string } = {}) =>
  Effect.gen(function*() {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-start-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
    const ready = yield* Deferred.make<string>()
    const exited = yield* Deferred.make<number | null>()
    let output = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = ChildProcess.spawn(tsx, ["--conditions=@parley/source", "serve.ts"], {
          cwd: examplesDir,
          env: { ...offlineEnv, PARLEY_PORT: "0", PARLEY_DATA_DIR: dataDir, ...env },
          stdio: ["ignore", "pipe", "pipe"]
        })
        child.stdout.on("data", (chunk) => {
          output += String(chunk)
          if (/\n {2}logs: .*\n/.test(output)) Deferred.doneUnsafe(ready, Effect.succeed(output))
        })
        child.stderr.on("data", (chunk) => void (output += String(chunk)))
        child.on("exit", (code) => {
          Deferred.doneUnsafe(exited, Effect.succeed(code))
          Deferred.doneUnsafe(ready, Effect.die(new Error(`npm start exited (${code}):\n${output}`)))
        })
        return child
      }),
      // Ctrl-C, which tsx passes on to the server it runs (a SIGKILL would stop tsx and leave the server running),
      // then SIGKILL if it has not exited within 10 seconds.
      (child) =>
        Effect.suspend(() => {
          if (child.exitCode !== null || child.signalCode !== null) return Effect.void
          child.kill("SIGINT")
          return Deferred.await(exited).pipe(
            Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.sync(() => child.kill("SIGKILL")) }),
            Effect.asVoid
          )
        })
    )
    const banner = yield* Deferred.await(ready).pipe(Effect.timeout("60 seconds"))
    const url = /session app: (http:\/\/127\.0\.0\.1:\d+)\//.exec(banner)?.[1] ?? ""
    const key = /API key \(kept in (.+)\): (\S+)/.exec(banner)
    assert.notStrictEqual(url, "", banner)
    assert.isNotNull(key, banner)
    return { child, dataDir, banner, url, keyFile: key?.[1] ?? "", key: key?.[2] ?? "", exited, output: () => output }
  })

/** The HTTP transport to the server, as the session app or a program uses it. */
const transportTo = (url: string, apiKey: string): Effect.Effect<Transport.Service, never, Scope.Scope> =>
  Effect.map(Layer.build(HttpTransport.layer({ url, apiKey })), (context) => Context.get(context, Transport.Transport))

/**
 * A turn of a `shop` session driven to its end as a person at the session app drives it: each approval allowed, each
 * `lookup_price` given the price, the open callbacks polled meanwhile.
 */
const driveTurn = (transport: Transport.Service, agent: AgentSpec.AgentSpec, input: string) =>
  Effect.gen(function*() {
    const session = yield* transport.createSession(agent)
    const turn = yield* transport.sendMessage(session.sessionId, input)
    for (let i = 0; i < 600; i++) {
      for (const { callback } of yield* transport.listOpen()) {
        const answer = callback._tag === "OpenApproval"
          ? new Answer.AllowApproval()
          : Answer.ClientToolResult.success({ price: "850 EUR" })
        yield* transport.answer({
          sessionId: callback.sessionId,
          turnId: callback.turnId,
          callbackId: callback.id,
          answer
        }).pipe(Effect.ignore)
      }
      const snapshot = yield* transport.snapshot(session.sessionId, turn.turnId)
      if (snapshot.state !== undefined && snapshot.state._tag !== "Blocked") {
        return { state: snapshot.state, sessionId: session.sessionId }
      }
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error("the turn did not end"))
  }).pipe(Effect.orDie)

const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "")

describe("npm start", () => {
  it("the root's start and demo scripts run the examples' start (serve.ts) and demo (main.ts)", () => {
    assert.strictEqual(scripts(path.join(repoDir, "package.json")).start, "npm run start -w @parley/examples")
    assert.strictEqual(scripts(path.join(repoDir, "package.json")).demo, "npm run demo -w @parley/examples")
    assert.match(scripts(path.join(examplesDir, "package.json")).start, / serve\.ts$/)
    assert.match(scripts(path.join(examplesDir, "package.json")).demo, / main\.ts$/)
  })

  it.live(
    "serves the guides' agents and prints the app's URL with the key, the local key and the CLI hint",
    () =>
      Effect.gen(function*() {
        const { banner: printed, child, dataDir, exited, key, keyFile, url } = yield* startServer()
        assert.include(printed, `session app: ${url}/#key=${key}\n`, "one click opens the app with the key")
        assert.strictEqual(keyFile, path.join(dataDir, "api-key"))
        assert.strictEqual(fs.readFileSync(path.join(dataDir, "api-key"), "utf8").trim(), key)
        assert.strictEqual(fs.statSync(path.join(dataDir, "api-key")).mode & 0o777, 0o600)
        assert.include(printed, "models: the guides' scripted brains")
        assert.include(printed, "what waits for an answer: npx parley callbacks list")
        assert.include(printed, "logs: warnings and errors only (PARLEY_LOG_LEVEL=info: a line per request)")

        const agents = yield* Effect.promise(() =>
          fetch(`${url}/agents`, { headers: { authorization: `Bearer ${key}` } }).then((response) =>
            response.json() as Promise<ReadonlyArray<{ readonly name: string }>>
          )
        )
        assert.deepStrictEqual(agents.map((agent) => agent.name), ["assistant", "shop", "ops"])
        const page = yield* Effect.promise(() => fetch(`${url}/`).then((response) => response.text()))
        assert.include(page, "<title>Parley</title>", "the session app at the URL it printed")
        const refused = yield* Effect.promise(() => fetch(`${url}/agents`))
        assert.strictEqual(refused.status, 401, "the API needs the key")
        assert.isTrue(fs.existsSync(path.join(dataDir, "sessions.db")), "sessions in <data dir>/sessions.db")

        child.kill("SIGINT")
        const code = yield* Deferred.await(exited).pipe(Effect.timeout("10 seconds"))
        assert.notStrictEqual(code, null, "it exits on Ctrl-C")
      }),
    { timeout: 90_000 }
  )

  it.live(
    "quiet by default: turns to their end, the app's polls and a stream read print nothing after the banner",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const transport = yield* transportTo(server.url, server.key)
        const shop = ApprovalsAgent.agent.spec
        for (const question of ["What do the Atlas and the Nova cost?", "What does the Atlas cost?", "And the Nova?"]) {
          const { sessionId, state } = yield* driveTurn(transport, shop, question)
          assert.strictEqual(state._tag, "Completed", JSON.stringify(state))
          // The session's events, as the app reads them when it opens the session.
          const events = yield* transport.events(sessionId, 0).pipe(
            Stream.takeUntil((event) => event._tag === "TurnEnded" && event.sessionId === sessionId),
            Stream.runCollect,
            Effect.orDie
          )
          assert.isTrue(events.some((event) => event._tag === "CallbackResolved"), "callbacks answered")
        }
        // The session app's polls (every 3 s for 10 minutes is 200 of them), its page and a 401.
        yield* Effect.forEach(Array.from({ length: 200 }), () => transport.listOpen(), { concurrency: 4 })
        yield* Effect.promise(() => fetch(`${server.url}/`).then((response) => response.text()))
        yield* Effect.promise(() => fetch(`${server.url}/agents`).then((response) => response.text()))
        yield* Effect.sleep("500 millis")

        const printed = lines(server.output())
        assert.isBelow(printed.length, 20, server.output())
        assert.deepStrictEqual(printed, lines(server.banner), "nothing after the banner")
      }),
    { timeout: 180_000 }
  )

  it.live("PARLEY_LOG_LEVEL=info: a line per request, in PARLEY_LOG_FORMAT", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ PARLEY_LOG_LEVEL: "info", PARLEY_LOG_FORMAT: "json" })
      assert.include(server.banner, "logs: a line per request, warnings and errors")
      const transport = yield* transportTo(server.url, server.key)
      yield* transport.listOpen().pipe(Effect.orDie)
      yield* Effect.sleep("500 millis")
      assert.match(server.output(), /"route":"\/callbacks".*"status":200|"status":200.*"route":"\/callbacks"/)
    }), { timeout: 90_000 })
})
