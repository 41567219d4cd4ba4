/**
 * Every example folder is a runnable program whose output is part of its guide: run each folder's `main.ts` as a
 * real process (as a reader would, with `tsx`, offline) and compare what it prints with `expected-output.txt`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const examplesDir = path.resolve(import.meta.dirname, "..")
const tsx = path.resolve(examplesDir, "..", "node_modules", ".bin", "tsx")

/** The environment of a reader without an API key: the examples must run offline. */
const { MISTRAL_API_KEY: _apiKey, ...offlineEnv } = process.env

/** Runs `tsx <file>` from the examples folder and returns its stdout; fails with stderr when it exits non-zero. */
const runExample = (file: string) =>
  Effect.async<string, Error>((resume) => {
    const child = execFile(
      tsx,
      ["--conditions=@parley/source", file], // the packages' sources, not their build
      { cwd: examplesDir, env: { ...offlineEnv, NO_COLOR: "1" }, timeout: 60_000 },
      (error, stdout, stderr) => {
        resume(
          error === null
            ? Effect.succeed(stdout)
            : Effect.fail(new Error(`tsx ${file} failed: ${error.message}\n${stderr}`))
        )
      }
    )
    return Effect.sync(() => child.kill())
  })

const readExpected = (folder: string) => fs.readFileSync(path.join(examplesDir, folder, "expected-output.txt"), "utf8")

/** The folders holding one guide's programs: a `main.ts` and the `expected-output.txt` it must print. */
const folders = fs.readdirSync(examplesDir, { withFileTypes: true })
  .filter((entry) =>
    entry.isDirectory() &&
    fs.existsSync(path.join(examplesDir, entry.name, "main.ts")) &&
    fs.existsSync(path.join(examplesDir, entry.name, "expected-output.txt"))
  )
  .map((entry) => entry.name)
  .sort()

describe.concurrent("examples", () => {
  it("the callbacks and subagent approvals guides have example folders", () => {
    assert.includeMembers(folders, ["callbacks", "subagent-approvals"])
  })

  for (const folder of folders) {
    it.live(`${folder}/main.ts prints expected-output.txt`, () =>
      Effect.gen(function*() {
        const stdout = yield* runExample(path.join(folder, "main.ts"))
        assert.strictEqual(stdout, readExpected(folder))
      }), { timeout: 90_000 })
  }

  it.live(
    "main.ts (npm start) says it runs offline, then prints each guide's walkthrough",
    () =>
      Effect.gen(function*() {
        const stdout = yield* runExample("main.ts")
        assert.match(stdout.split("\n")[0], /offline/)
        for (const folder of folders) {
          assert.include(stdout, readExpected(folder), `the ${folder} walkthrough`)
        }
        // each walkthrough under its guide's header, in order
        const callbacks = stdout.indexOf("# Callbacks (docs/guides/callbacks.md)\n" + readExpected("callbacks"))
        const subagents = stdout.indexOf(
          "\n\n# Subagent approvals (docs/guides/subagent-approvals.md)\n" + readExpected("subagent-approvals")
        )
        assert.isAtLeast(callbacks, 0, "the callbacks walkthrough under its header")
        assert.isAbove(subagents, callbacks, "the subagent approvals walkthrough under its header, after a blank line")
      }),
    { timeout: 90_000 }
  )
})
