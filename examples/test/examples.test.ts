/**
 * Every example folder is a runnable program whose output is part of its guide: run each folder's `main.ts` as a
 * real process (as a reader would, with `tsx`, offline) and compare what it prints with `expected-output.txt`.
 *
 * What a program prints is the guide's own lines plus the narration of `npm run demo` (lines starting with `  » `: one
 * per callback, one per finished turn; see `shared/narrate.ts`). Both are checked exactly: the whole output against
 * `expected-output.txt`, and the guide's lines alone, in order, against the "Output:" blocks of the guide in
 * `docs/guides/`.
 */
import { assert, describe, it } from "@effect/vitest"
import { SqliteClient } from "@parley/store-sql"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Narrate from "../shared/narrate.js"
import * as Runtime from "../shared/runtime.js"

const examplesDir = path.resolve(import.meta.dirname, "..")
const repoDir = path.resolve(examplesDir, "..")
const tsx = path.resolve(repoDir, "node_modules", ".bin", "tsx")

/**
 * The environment of a reader without an API key (the examples must run offline), whose stdout is not a terminal:
 * no colour settings are inherited, each test sets the ones it checks.
 */
const { FORCE_COLOR: _force, MISTRAL_API_KEY: _apiKey, NO_COLOR: _noColor, ...offlineEnv } = process.env

/**
 * Runs `tsx <file>` from the examples folder and returns its stdout; fails with stderr when it exits non-zero (or
 * takes over four minutes: a loaded machine takes a minute over HTTP, the check is for a program that hangs). Each
 * run keeps its sessions in a SQLite file of its own, in a temporary folder removed afterwards (`npm run demo` uses
 * `.parley/sessions.db`; runs at once must not share a file).
 */
const runExample = (file: string, env: { readonly [name: string]: string } = {}) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parley-examples-"))),
    (folder) => runIn(file, { PARLEY_SESSIONS_DB: path.join(folder, "sessions.db"), ...env }),
    (folder) => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true }))
  )

const runIn = (file: string, env: { readonly [name: string]: string }) =>
  Effect.callback<string, Error>((resume) => {
    const child = execFile(
      tsx,
      ["--conditions=@parley/source", file], // the packages' sources, not their build
      { cwd: examplesDir, env: { ...offlineEnv, ...env }, timeout: 240_000 },
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

/** Each program runs once, however many tests read its output. */
const runs = new Map<string, Effect.Effect<string, Error>>()
const output = (file: string): Effect.Effect<string, Error> => {
  const run = runs.get(file) ?? Effect.runSync(Effect.cached(runExample(file)))
  runs.set(file, run)
  return run
}

const readExpected = (folder: string) => fs.readFileSync(path.join(examplesDir, folder, "expected-output.txt"), "utf8")

const isNarration = (line: string) => line.startsWith(Narrate.prefix)

/** The guide's own lines of an output: without the narration, split into its `=== program ===` sections. */
const guideSections = (output: string): ReadonlyArray<string> =>
  output.split("\n").filter((line) => !isNarration(line)).join("\n")
    .split(/^=== .* ===\n/m).slice(1).map((section) => section.trimEnd())

/** The "Output:" blocks of a guide, in order. */
const guideOutputs = (guide: string): ReadonlyArray<string> =>
  Array.from(
    fs.readFileSync(path.join(repoDir, "docs", "guides", guide), "utf8").matchAll(
      /^Output:\n\n```\n([\s\S]*?)\n```$/gm
    ),
    (match) => match[1]
  )

/** The folders holding one guide's programs: a `main.ts` and the `expected-output.txt` it must print. */
const folders = fs.readdirSync(examplesDir, { withFileTypes: true })
  .filter((entry) =>
    entry.isDirectory() &&
    fs.existsSync(path.join(examplesDir, entry.name, "main.ts")) &&
    fs.existsSync(path.join(examplesDir, entry.name, "expected-output.txt"))
  )
  .map((entry) => entry.name)
  .sort()

/** The lines a program of a walkthrough printed, under its `=== name ===` header. */
const sectionOf = (stdout: string, name: string): string => stdout.split(`=== ${name} ===\n`)[1].split(/^=== /m)[0]

const ansi = /\x1b\[[0-9;]*m/g // eslint-disable-line no-control-regex

describe.concurrent("examples", () => {
  it("the callbacks and subagent approvals guides have example folders", () => {
    assert.includeMembers(folders, ["callbacks", "subagent-approvals"])
  })

  for (const folder of folders) {
    it.live(
      `${folder}/main.ts prints expected-output.txt, and the guide's lines are the guide's Output blocks`,
      () =>
        Effect.gen(function*() {
          const stdout = yield* output(path.join(folder, "main.ts"))
          assert.strictEqual(stdout, readExpected(folder))
          assert.notMatch(stdout, ansi, "plain when stdout is not a terminal")
          assert.deepStrictEqual(guideSections(stdout), guideOutputs(`${folder}.md`))
        }),
      { timeout: 300_000 }
    )
  }

  it.live(
    "npm run demo narrates each callback (kind, tool id, arguments, who answered, the answer), then the state",
    () =>
      Effect.gen(function*() {
        const stdout = yield* runExample(path.join("callbacks", "main.ts"))
        const section = (name: string) => stdout.split(`=== ${name} ===\n`)[1].split("\n=== ")[0].split("\n")
        assert.deepStrictEqual(section("with-run").filter(isNarration), [
          `  » sign_in gmail → refuseSignIns: deny gmail`,
          `  » approval client.get_location {"precision":"city"} → approveReads: allow`,
          `  » client_tool client.get_location {"precision":"city"} → answerLocation: {"city":"Lyon","country":"France"}`,
          `  » assistant: Completed`
        ])
        // by id: each callback's line comes right after the program says it answers it
        assert.deepStrictEqual(section("by-id").slice(0, 6), [
          "answering: sign_in",
          `  » sign_in gmail → by id: deny gmail`,
          "answering: approval",
          `  » approval client.get_location {"precision":"city"} → by id: allow`,
          "answering: client_tool",
          `  » client_tool client.get_location {"precision":"city"} → by id: {"city":"Lyon","country":"France"}`
        ])
      }),
    { timeout: 300_000 }
  )

  it.live("colours the narration on a terminal (FORCE_COLOR), and only the narration", () =>
    Effect.gen(function*() {
      const coloured = yield* runExample(path.join("callbacks", "with-run.ts"), { FORCE_COLOR: "1" })
      const plain = sectionOf(yield* output(path.join("callbacks", "main.ts")), "with-run")
      assert.match(coloured, ansi)
      assert.strictEqual(coloured.replace(ansi, ""), plain)
      for (const line of coloured.split("\n")) {
        if (!isNarration(line.replace(ansi, ""))) assert.notMatch(line, ansi, line)
      }
      assert.isFalse(Narrate.colours({ NO_COLOR: "1" }, true), "NO_COLOR turns colours off on a terminal")
      assert.isTrue(Narrate.colours({}, true), "a terminal gets colours")
      assert.isFalse(Narrate.colours({}, false), "a pipe does not")
    }), { timeout: 300_000 })

  it.live(
    "main.ts (npm run demo) says it runs offline, then prints each guide's walkthrough; the callbacks guide shows its first lines",
    () =>
      Effect.gen(function*() {
        const stdout = yield* output("main.ts")
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
        // the callbacks guide's "npm run demo" block: the first lines of what it prints
        const guide = fs.readFileSync(path.join(repoDir, "docs", "guides", "callbacks.md"), "utf8")
        const shown = /^```\n\$ npm run demo\n([\s\S]*?)\n```$/m.exec(guide)
        assert.isNotNull(shown, "docs/guides/callbacks.md shows `$ npm run demo` and what it prints")
        const lines = (shown?.[1] ?? "").split("\n").filter((line) => line !== "…")
        assert.isAtLeast(lines.length, 8)
        assert.deepStrictEqual(lines, stdout.split("\n").slice(0, lines.length))
      }),
    { timeout: 300_000 }
  )

  it.live(
    "npm run demo keeps its sessions in a SQLite file: .parley/sessions.db at the repository root (a temporary one here)",
    () =>
      Effect.gen(function*() {
        const unset = { ...process.env }
        delete unset.PARLEY_SESSIONS_DB
        assert.strictEqual(Runtime.sessionsFile(unset), path.join(repoDir, ".parley", "sessions.db"))
        const folder = fs.mkdtempSync(path.join(os.tmpdir(), "parley-examples-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(folder, { recursive: true, force: true })))
        const filename = path.join(folder, "sessions.db")
        const stdout = yield* runIn(path.join("callbacks", "main.ts"), { PARLEY_SESSIONS_DB: filename })
        assert.strictEqual(stdout, readExpected("callbacks"))
        const stored = yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql<{ readonly trees: number; readonly events: number }>`SELECT
            (SELECT COUNT(*) FROM parley_trees) AS trees, (SELECT COUNT(*) FROM parley_events) AS events`
        }).pipe(Effect.provide(SqliteClient.layer({ filename })))
        // one session per program of the walkthrough, at least, each with its log
        assert.isAtLeast(stored[0].trees, 4)
        assert.isAbove(stored[0].events, stored[0].trees)
      }),
    { timeout: 300_000 }
  )
})

describe.concurrent("examples over HTTP (PARLEY_EXAMPLES_TRANSPORT=http: a ParleyServer and HttpTransport)", () => {
  it.live(
    "callbacks/main.ts prints expected-output.txt over HTTP, line for line",
    () =>
      Effect.gen(function*() {
        const stdout = yield* runExample(path.join("callbacks", "main.ts"), { PARLEY_EXAMPLES_TRANSPORT: "http" })
        assert.strictEqual(stdout, readExpected("callbacks"))
      }),
    { timeout: 300_000 }
  )

  it.live(
    "subagent-approvals/main.ts prints the guide's lines over HTTP; the narration of concurrent subagents may interleave",
    () =>
      Effect.gen(function*() {
        const stdout = yield* runExample(path.join("subagent-approvals", "main.ts"), {
          PARLEY_EXAMPLES_TRANSPORT: "http"
        })
        // Two researchers run at once, and a subagent of an earlier turn races the root's next turn: over a network
        // their callbacks open in another order than in-process. The guide's own lines do not depend on it.
        assert.deepStrictEqual(guideSections(stdout), guideSections(readExpected("subagent-approvals")))
        const narration = (text: string) => text.split("\n").filter(isNarration)
        const expected = new Set(narration(readExpected("subagent-approvals")))
        for (const line of narration(stdout)) assert.isTrue(expected.has(line), `unexpected narration: ${line}`)
      }),
    { timeout: 300_000 }
  )
})
