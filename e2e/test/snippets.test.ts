/**
 * Every ```ts block of the README, the getting-started page, the guides (and the architecture pages and the
 * packages' READMEs) compiles, with the context a reader has (earlier blocks of the same page, the packages): see
 * `snippets.ts`. The README's "A taste" program itself runs in
 * `install.test.ts`, from the packed packages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Snippets from "./snippets.js"

const repoDir = path.resolve(import.meta.dirname, "..", "..")

/** `Snippets.check` in a child process (`snippetsProcess.ts`): the compiler would block this worker for its run. */
const check = (files: ReadonlyArray<string>, workDir: string) =>
  Effect.callback<ReadonlyArray<Snippets.Problem>, Error>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", path.join(import.meta.dirname, "snippetsProcess.ts"), JSON.stringify({ files, workDir })],
      { cwd: repoDir, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(
          error === null
            ? Effect.succeed(JSON.parse(stdout) as ReadonlyArray<Snippets.Problem>)
            : Effect.fail(new Error(`the snippets check failed: ${error.message}\n${stderr}`))
        )
    )
    return Effect.sync(() => child.kill())
  })

const markdownIn = (dir: string) =>
  fs.readdirSync(path.join(repoDir, dir)).filter((file) => file.endsWith(".md")).sort().map((file) => `${dir}/${file}`)

/** The README, getting started and the guides; the architecture pages and the packages' READMEs too. */
const docs = [
  "README.md",
  "docs/getting-started.md",
  ...markdownIn("docs/guides"),
  ...markdownIn("docs/architecture"),
  ...fs.readdirSync(path.join(repoDir, "packages")).sort().map((name) => `packages/${name}/README.md`)
]

describe("docs", () => {
  it("the README, the getting-started page and both guides have ts blocks", () => {
    for (const doc of ["README.md", "docs/getting-started.md", "docs/guides/callbacks.md"]) {
      assert.isAbove(Snippets.blocksOf(repoDir, doc).length, 0, doc)
    }
    assert.includeMembers(docs, ["docs/guides/callbacks.md", "docs/guides/subagent-approvals.md"])
  })

  it.effect("every ts block compiles", () =>
    Effect.gen(function*() {
      const problems = yield* check(docs, path.join(repoDir, "e2e", ".tmp", "snippets"))
      assert.deepStrictEqual(problems.map((problem) => `${problem.where}: ${problem.message}`), [])
    }), { timeout: 180_000 })

  it.effect(
    "a block that uses a name nobody declares fails, at its line in the Markdown file",
    () =>
      Effect.gen(function*() {
        const dir = path.join(repoDir, "e2e", ".tmp", "broken")
        fs.mkdirSync(dir, { recursive: true })
        fs.writeFileSync(
          path.join(dir, "broken.md"),
          "# Broken\n\n```ts\nconst agent = Agent.make({ name: \"a\", instructions: \"hi\" })\n```\n\n" +
            "```ts\nconst state = Agent.run(agent, 42)\nconst nope = notDeclaredAnywhere\n```\n"
        )
        const problems = yield* check(["e2e/.tmp/broken/broken.md"], path.join(dir, "work"))
        assert.deepStrictEqual(problems.map((problem) => problem.where), [
          "e2e/.tmp/broken/broken.md:8",
          "e2e/.tmp/broken/broken.md:9"
        ])
        assert.include(problems[1].message, "notDeclaredAnywhere")
      }),
    { timeout: 180_000 }
  )
})
