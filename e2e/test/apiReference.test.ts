/**
 * The API reference builds: `@effect/docgen` in each package (as `npm run docgen` does) writes a page per public
 * module into `packages/<name>/docs/modules/`, after checking that every export has `@since` and after type-checking
 * and running every `@example` of the TSDoc. A broken example fails it, and so fails CI.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Semaphore } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { repoDir, repoEnv, run } from "./processes.js"

const docgen = path.join(repoDir, "node_modules", ".bin", "docgen")

/** Two docgen runs at a time: each type-checks a package with its examples. */
const twoAtATime = Semaphore.makeUnsafe(2)

const docgenIn = (dir: string) => twoAtATime.withPermits(1)(run(docgen, [], { cwd: dir, env: repoEnv() }))

/** The modules docgen documents: the public ones (`src/*.ts`), less those its `docgen.json` excludes. */
const publicModules = (dir: string): ReadonlyArray<string> => {
  const config = JSON.parse(fs.readFileSync(path.join(dir, "docgen.json"), "utf8")) as { exclude?: Array<string> }
  const excluded = new Set((config.exclude ?? []).filter((glob) => !glob.includes("*")))
  return fs.readdirSync(path.join(dir, "src"))
    .filter((file) => file.endsWith(".ts") && !excluded.has(`src/${file}`))
    .sort()
}

const packages = fs.readdirSync(path.join(repoDir, "packages")).filter((name) =>
  fs.existsSync(path.join(repoDir, "packages", name, "docgen.json"))
).sort()

describe.concurrent("API reference", () => {
  it("every package has a docgen.json", () => {
    assert.deepStrictEqual(packages, [
      "cli",
      "cluster",
      "core",
      "log",
      "mcp",
      "mistral",
      "policy",
      "react",
      "runtime",
      "server",
      "store-sql",
      "telemetry",
      "testing",
      "tools",
      "transport-http"
    ])
  })

  for (const name of packages) {
    it.live(
      `@parley/${name}: docgen checks the examples and writes a page per public module`,
      () =>
        Effect.gen(function*() {
          const dir = path.join(repoDir, "packages", name)
          fs.rmSync(path.join(dir, "docs"), { recursive: true, force: true })
          yield* docgenIn(dir)
          const pages = fs.readdirSync(path.join(dir, "docs", "modules")).filter((file) => file.endsWith(".ts.md"))
          assert.deepStrictEqual(pages.sort(), publicModules(dir).map((module) => `${module}.md`))
        }),
      { timeout: 300_000 }
    )
  }

  it.live("a broken @example fails the build of the reference", () =>
    Effect.gen(function*() {
      const dir = path.join(repoDir, "e2e", ".tmp", "docgen-broken")
      fs.rmSync(dir, { recursive: true, force: true })
      fs.mkdirSync(path.join(dir, "src"), { recursive: true })
      fs.writeFileSync(
        path.join(dir, "package.json"),
        JSON.stringify({ name: "@parley/broken", homepage: "https://www.npmjs.com/package/@parley/broken" })
      )
      fs.copyFileSync(path.join(repoDir, "packages", "core", "docgen.json"), path.join(dir, "docgen.json"))
      fs.writeFileSync(
        path.join(dir, "src", "Greeting.ts"),
        [
          "/**",
          " * Greetings.",
          " *",
          " * @since 0.1.0",
          " */",
          "",
          "/**",
          " * @example",
          " * ```ts",
          " * import { Agent } from \"@parley/core\"",
          " *",
          " * const assistant = Agent.make({ name: \"assistant\", instructions: 42 })",
          " * ```",
          " *",
          " * @since 0.1.0",
          " * @category Constructors",
          " */",
          "export const hello = (name: string): string => `Hello, ${name}!`",
          ""
        ].join("\n")
      )
      const error = yield* Effect.flip(docgenIn(dir))
      assert.include(error.message, "tsc on examples")
      assert.include(error.message, "src-Greeting.ts-function-hello-0.ts(3,51): error TS2322")
    }), { timeout: 300_000 })
})
