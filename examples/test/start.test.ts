/**
 * `npm start` is the product: the session server of `serve.ts` (what the root's `start` script runs, through the
 * examples' own `start` script), on a free port and a temporary data folder here. It prints the app's URL, the local
 * key (created in `<data dir>/api-key`, mode 0600) and the `npx parley callbacks list` hint, serves the guides' agents,
 * and stops on Ctrl-C. `npm run demo` is the narrated walkthrough (`main.ts`, checked by `examples.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const examplesDir = path.resolve(import.meta.dirname, "..")
const repoDir = path.resolve(examplesDir, "..")
const tsx = path.resolve(repoDir, "node_modules", ".bin", "tsx")
const { MISTRAL_API_KEY: _apiKey, PARLEY_API_KEYS: _keys, ...offlineEnv } = process.env

const scripts = (file: string) =>
  (JSON.parse(fs.readFileSync(file, "utf8")) as { scripts: Record<string, string> }).scripts

describe("npm start", () => {
  it("the root's start and demo scripts run the examples' start (serve.ts) and demo (main.ts)", () => {
    assert.strictEqual(scripts(path.join(repoDir, "package.json")).start, "npm run start -w @parley/examples")
    assert.strictEqual(scripts(path.join(repoDir, "package.json")).demo, "npm run demo -w @parley/examples")
    assert.match(scripts(path.join(examplesDir, "package.json")).start, / serve\.ts$/)
    assert.match(scripts(path.join(examplesDir, "package.json")).demo, / main\.ts$/)
  })

  it.live(
    "serves the guides' agents and prints the app's URL, the local key and the CLI hint",
    () =>
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
              env: { ...offlineEnv, PARLEY_PORT: "0", PARLEY_DATA_DIR: dataDir },
              stdio: ["ignore", "pipe", "pipe"]
            })
            child.stdout.on("data", (chunk) => {
              output += String(chunk)
              if (output.includes("npx parley callbacks list")) Deferred.doneUnsafe(ready, Effect.succeed(output))
            })
            child.stderr.on("data", (chunk) => void (output += String(chunk)))
            child.on("exit", (code) => {
              Deferred.doneUnsafe(exited, Effect.succeed(code))
              Deferred.doneUnsafe(ready, Effect.die(new Error(`npm start exited (${code}):\n${output}`)))
            })
            return child
          }),
          (child) => Effect.sync(() => child.kill("SIGKILL"))
        )
        const printed = yield* Deferred.await(ready).pipe(Effect.timeout("60 seconds"))
        const url = /session app: (http:\/\/127\.0\.0\.1:\d+)\//.exec(printed)?.[1]
        const key = /API key \(kept in (.+)\): (\S+)/.exec(printed)
        assert.isDefined(url, printed)
        assert.isNotNull(key, printed)
        assert.strictEqual(key?.[1], path.join(dataDir, "api-key"))
        assert.strictEqual(fs.readFileSync(path.join(dataDir, "api-key"), "utf8").trim(), key?.[2])
        assert.strictEqual(fs.statSync(path.join(dataDir, "api-key")).mode & 0o777, 0o600)
        assert.include(printed, "models: the guides' scripted brains")
        assert.include(printed, "what waits for an answer: npx parley callbacks list")

        const agents = yield* Effect.promise(() =>
          fetch(`${url}/agents`, { headers: { authorization: `Bearer ${key?.[2]}` } }).then((response) =>
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
})
