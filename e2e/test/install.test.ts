/**
 * The packages install and run outside this repository, as a new user gets them: `npm pack` every public package
 * (its `prepack` builds it), install the tarballs into a fresh project in a temporary directory — made of the
 * `package.json` and `tsconfig.json` the getting-started page shows, nothing else — type-check the README's "A taste"
 * program there and run it with plain `node` on the packages' JS: it must print what the README says it prints. Then
 * the same program on the durable runtime in one line (`SqlRuntime.layerSqlite()`), which creates
 * `.parley/sessions.db` in the project.
 *
 * Packing and installing is the slow part (a minute or two), so it happens once, in one test.
 *
 * Offline in practice: the packages' dependencies are in the npm cache after the repository's own install
 * (`--prefer-offline`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { outsideEnv, repoDir, repoEnv, run } from "./processes.js"
import * as Snippets from "./snippets.js"

/** Every public package: each has a docgen.json (the API reference) and is packed. */
const packages = fs.readdirSync(path.join(repoDir, "packages")).filter((name) =>
  fs.existsSync(path.join(repoDir, "packages", name, "docgen.json"))
).sort()

/** A package's namespace in a program: `store-sql` → `store_sql`. */
const identifier = (name: string) => name.replaceAll("-", "_")

/** The `package.json` and `tsconfig.json` of the getting-started page's Install section (its json blocks). */
const installFiles = () => {
  const page = fs.readFileSync(path.join(repoDir, "docs", "getting-started.md"), "utf8")
  const install = page.slice(page.indexOf("## Install"), page.indexOf("\n## ", page.indexOf("## Install") + 1))
  const blocks = Array.from(install.matchAll(/^```json\n([\s\S]*?)^```$/gm), (match) => match[1])
  const packageJson = blocks.find((block) => block.includes("\"allowScripts\""))
  const tsconfigJson = blocks.find((block) => block.includes("\"compilerOptions\""))
  if (packageJson === undefined || tsconfigJson === undefined) {
    throw new Error("docs/getting-started.md#install shows no package.json or tsconfig.json")
  }
  return { packageJson, tsconfigJson }
}

/** "A taste" on the durable runtime: the README's one-line swap, `SqlRuntime.layerSqlite()` for `layerMemory()`. */
const durableOf = (program: string) => {
  const readme = fs.readFileSync(path.join(repoDir, "README.md"), "utf8")
  assert.include(readme, "SqlRuntime.layerSqlite().pipe(", "the README shows the durable runtime")
  assert.include(program, "LocalTransport.layerMemory()")
  return `import { SqlRuntime } from "@parley/store-sql"\n${
    program.replace("LocalTransport.layerMemory()", "SqlRuntime.layerSqlite()")
  }`
}

/** The README's "A taste" program (its first ts block), and what the README says it prints (the next block). */
const readmeProgram = () => {
  const readme = fs.readFileSync(path.join(repoDir, "README.md"), "utf8")
  const [taste] = Snippets.blocksOf(repoDir, "README.md")
  const after = readme.slice(readme.indexOf(taste.code) + taste.code.length + "```".length) // past its fence
  const printed = /^```\n([\s\S]*?)^```$/m.exec(after)?.[1] ?? ""
  return { program: taste.code, printed }
}

/** Imports every package, a deep import, and tries an internal module (which `exports` blocks). */
const everyPackage = () =>
  `${packages.map((name) => `import * as ${identifier(name)} from "@parley/${name}"`).join("\n")}
import * as Turn from "@parley/core/Turn"

const namespaces = { ${packages.map(identifier).join(", ")} }
for (const [name, module] of Object.entries(namespaces)) console.log(name, Object.keys(module).sort().join(","))
console.log("Turn.answer", typeof Turn.answer)
const internal = "@parley/runtime/internal/engine"
await import(internal).then(
  () => console.log("internal: importable"),
  (error: { code?: string }) => console.log("internal:", error.code)
)
`

describe("the packed packages", () => {
  it.live(
    "install into a project made as the docs say, outside the repository; type-check and run the README program, in memory and on SQLite",
    () =>
      Effect.gen(function*() {
        assert.isAtLeast(Number(process.versions.node.split(".")[0]), 24, "the programs below run on Node 24")
        const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-install-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(work, { recursive: true, force: true })))
        const tarballs = path.join(work, "tarballs")
        const app = path.join(work, "app")
        fs.mkdirSync(tarballs)
        fs.mkdirSync(app)

        // pack, in the repository: each package's prepack builds its dist/ first
        const packed = yield* run(
          "npm",
          ["pack", "--json", "--pack-destination", tarballs, ...packages.flatMap((name) => ["-w", `@parley/${name}`])],
          { cwd: repoDir, env: repoEnv() }
        )
        const files = JSON.parse(packed.stdout) as ReadonlyArray<
          { filename: string; files: ReadonlyArray<{ path: string }> }
        >
        assert.includeMembers(packages, ["core", "mistral", "policy", "runtime", "store-sql", "testing", "tools"])
        // `npm run build` (tsconfig.build.json) builds every one of them
        const build = JSON.parse(fs.readFileSync(path.join(repoDir, "tsconfig.build.json"), "utf8")) as {
          references: ReadonlyArray<{ path: string }>
        }
        assert.deepStrictEqual(
          build.references.map((reference) => reference.path.split("/")[1]).sort(),
          packages
        )
        assert.deepStrictEqual(
          files.map((tarball) => tarball.filename).sort(),
          packages.map((name) => `parley-${name}-0.1.0.tgz`).sort()
        )
        for (const tarball of files) {
          const paths = tarball.files.map((file) => file.path)
          assert.include(paths, "dist/index.js", tarball.filename)
          assert.include(paths, "dist/index.d.ts", tarball.filename)
          assert.isFalse(paths.some((file) => file.startsWith("src/") || file.startsWith("test/")), tarball.filename)
        }

        // a fresh project, outside the repository: the docs' package.json and tsconfig.json, and the README program
        const { printed, program } = readmeProgram()
        const { packageJson, tsconfigJson } = installFiles()
        fs.writeFileSync(path.join(app, "package.json"), packageJson)
        fs.writeFileSync(path.join(app, "tsconfig.json"), tsconfigJson)
        fs.writeFileSync(path.join(app, "main.ts"), program)
        fs.writeFileSync(path.join(app, "durable.ts"), durableOf(program))
        fs.writeFileSync(path.join(app, "every-package.ts"), everyPackage())
        const rootManifest = JSON.parse(fs.readFileSync(path.join(repoDir, "package.json"), "utf8"))
        const typesNode = rootManifest.devDependencies["@types/node"]
        yield* run(
          "npm",
          [
            "install",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            ...files.map((tarball) => path.join(tarballs, tarball.filename)),
            `@types/node@${typesNode}`
          ],
          { cwd: app, env: outsideEnv() }
        )
        // SQLite is Node's own node:sqlite: no SQLite addon is installed, none is built
        const addons = yield* run("find", ["node_modules", "-iname", "*sqlite*.node"], { cwd: app, env: outsideEnv() })
        assert.strictEqual(addons.stdout.trim(), "", "no native SQLite addon in the project")
        assert.isFalse(fs.existsSync(path.join(app, "node_modules", "better-sqlite3")), "no SQLite driver of its own")
        const installed = fs.readdirSync(path.join(app, "node_modules", "@parley")).sort()
        assert.deepStrictEqual(installed, [...packages].sort())
        assert.isFalse(
          fs.lstatSync(path.join(app, "node_modules", "@parley", "core")).isSymbolicLink(),
          "a copy, not a link"
        )

        // type-check (the packages' .d.ts) and emit JS to dist/, with the docs' tsconfig and the repository's TypeScript
        const tsc = path.join(repoDir, "node_modules", "typescript", "bin", "tsc")
        yield* run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, env: outsideEnv() })

        // run with plain node: the packages' dist/ JS, no source condition, no loader
        const taste = yield* run(process.execPath, [path.join("dist", "main.js")], { cwd: app, env: outsideEnv() })
        assert.strictEqual(taste.stdout, printed)
        assert.isFalse(fs.existsSync(path.join(app, ".parley")), "in memory: no file")
        const durable = yield* run(process.execPath, [path.join("dist", "durable.js")], { cwd: app, env: outsideEnv() })
        assert.strictEqual(durable.stdout, printed)
        assert.isTrue(fs.existsSync(path.join(app, ".parley", "sessions.db")), "the SQLite file, its folder created")
        const every = yield* run(process.execPath, [path.join("dist", "every-package.js")], {
          cwd: app,
          env: outsideEnv()
        })
        const lines = every.stdout.trim().split("\n")
        assert.include(lines.find((line) => line.startsWith("core ")), "Agent")
        assert.include(lines.find((line) => line.startsWith("runtime ")), "LocalTransport")
        assert.include(lines.find((line) => line.startsWith("testing ")), "ScriptedModel")
        assert.include(lines.find((line) => line.startsWith("store_sql ")), "SqlRuntime")
        assert.include(lines, "Turn.answer function")
        assert.include(lines, "internal: ERR_PACKAGE_PATH_NOT_EXPORTED")
        // the parley command, installed: its bin runs the package's build
        const help = yield* run(process.execPath, [path.join("node_modules", ".bin", "parley"), "--help"], {
          cwd: app,
          env: outsideEnv()
        })
        assert.include(help.stdout, "See what waits in Parley sessions")
        const unreachable = yield* run(
          process.execPath,
          [
            path.join("node_modules", ".bin", "parley"),
            "callbacks",
            "list",
            "--url",
            "http://127.0.0.1:9",
            "--key",
            "k"
          ],
          { cwd: app, env: outsideEnv() }
        ).pipe(Effect.flip)
        assert.include(String(unreachable), "cannot reach a Parley server at http://127.0.0.1:9")
      }).pipe(Effect.scoped),
    { timeout: 600_000 }
  )
})
