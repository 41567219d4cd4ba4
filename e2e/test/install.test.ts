/**
 * The packages install and run outside this repository, as a new user gets them, by the getting-started page's own
 * commands: its shell blocks run as they are written, in order — the one headed `# in the clone` in this repository
 * (`npm run pack`: every package built and packed into `parley-packages/`), those headed `# in your project` in a
 * fresh project in a temporary directory, made of the `package.json` and `tsconfig.json` the page shows and the
 * README's "A taste" program as `main.ts`. The project gets exactly what the page installs (`effect` at the
 * repository's exact version, the four packages "A taste" imports with the two they depend on, then
 * `@parley/store-sql`), its build prints what the README says "A taste" prints, and so does the README's durable
 * program, which creates `.parley/sessions.db` in the project. Then every tarball `npm run pack` made installs in a
 * second project: each package imports, its internals stay blocked, and the `parley` command runs.
 *
 * The blocks run in bash with Node 24 first on the PATH (the page asks for it) and `PARLEY` set to this repository
 * (the page says to set it to the clone), outside the repository's npm settings. npm reads the cache first
 * (`npm_config_prefer_offline`: the packages' dependencies are there after the repository's own install); what is
 * not cached (the latest TypeScript and tsx the page installs) comes from the registry.
 *
 * Packing and installing is the slow part (minutes on a loaded machine), so it happens once, in one test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { outsideEnv, repoDir, run } from "./processes.js"
import * as Snippets from "./snippets.js"

/** Every public package: each has a docgen.json (the API reference) and is packed. */
const packages = fs.readdirSync(path.join(repoDir, "packages")).filter((name) =>
  fs.existsSync(path.join(repoDir, "packages", name, "docgen.json"))
).sort()

/** A package's namespace in a program: `store-sql` → `store_sql`. */
const identifier = (name: string) => name.replaceAll("-", "_")

const gettingStarted = () => fs.readFileSync(path.join(repoDir, "docs", "getting-started.md"), "utf8")

/** The `package.json` and `tsconfig.json` of the getting-started page's Install section (its json blocks). */
const installFiles = () => {
  const page = gettingStarted()
  const install = page.slice(page.indexOf("## Install"), page.indexOf("\n## ", page.indexOf("## Install") + 1))
  const blocks = Array.from(install.matchAll(/^```json\n([\s\S]*?)^```$/gm), (match) => match[1])
  const packageJson = blocks.find((block) => block.includes("\"allowScripts\""))
  const tsconfigJson = blocks.find((block) => block.includes("\"compilerOptions\""))
  if (packageJson === undefined || tsconfigJson === undefined) {
    throw new Error("docs/getting-started.md#install shows no package.json or tsconfig.json")
  }
  return { packageJson, tsconfigJson }
}

/** A shell block of the getting-started page: where it runs (its first line says), its line, its commands. */
interface Step {
  readonly where: "clone" | "project"
  readonly line: number
  readonly commands: string
}

/** The page's ```sh blocks headed `# in the clone…` or `# in your project…`, in the page's order. */
const steps = (): ReadonlyArray<Step> => {
  const page = gettingStarted()
  return Array.from(page.matchAll(/^```sh\n([\s\S]*?)^```$/gm), (match) => {
    const where = /^# in (the clone|your project)\b/.exec(match[1])?.[1]
    return where === undefined ? undefined : {
      where: where === "the clone" ? "clone" as const : "project" as const,
      line: page.slice(0, match.index).split("\n").length + 1,
      commands: match[1]
    }
  }).filter((step) => step !== undefined)
}

/** A program's code lines, without comments (a comment line, or a line's trailing comment) and blank lines. */
const codeLines = (program: string) =>
  program.split("\n").map((line) => line.replace(/\s*\/\/.*$/, "")).filter((line) => line.trim() !== "")

/**
 * The README's "A taste" program (its first ts block) and what the README says it prints ("It prints `…`"), and the
 * same program on the durable runtime (its second ts block), which must be "A taste" with the one swap it announces:
 * `SqlRuntime.layerSqlite()` of `@parley/store-sql` for `LocalTransport.layerMemory()` of `@parley/runtime`.
 */
const readmePrograms = () => {
  const readme = fs.readFileSync(path.join(repoDir, "README.md"), "utf8")
  const [taste, durable] = Snippets.blocksOf(repoDir, "README.md")
  const after = readme.slice(readme.indexOf(taste.code) + taste.code.length)
  const printed = /^It prints `([^`]+)`/m.exec(after)?.[1]
  assert.isDefined(printed, "the README says what \"A taste\" prints")
  const swapped = codeLines(taste.code).map((line) =>
    line === "import { LocalTransport } from \"@parley/runtime\""
      ? "import { SqlRuntime } from \"@parley/store-sql\""
      : line.replace("LocalTransport.layerMemory()", "SqlRuntime.layerSqlite()")
  )
  assert.notDeepEqual(swapped, codeLines(taste.code), "\"A taste\" runs on LocalTransport.layerMemory()")
  assert.deepStrictEqual(codeLines(durable.code), swapped, "the durable program is \"A taste\" with one swap")
  return { program: taste.code, durable: durable.code, printed: `${printed}\n` }
}

/**
 * A user's shell outside the repository: none of its npm settings, Node 24 (the one running this test) first on the
 * PATH, `PARLEY` naming the clone, and npm reading its cache first.
 */
const userEnv = (): NodeJS.ProcessEnv => {
  const env = outsideEnv()
  return {
    ...env,
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ""}`,
    PARLEY: repoDir,
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false"
  }
}

/** The `@parley/*` dependencies a project's package.json records, and its `effect`. */
const dependenciesOf = (project: string) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(project, "package.json"), "utf8")) as {
    readonly dependencies?: Record<string, string>
  }
  const dependencies = manifest.dependencies ?? {}
  return {
    parley: Object.keys(dependencies).filter((name) => name.startsWith("@parley/")).sort(),
    effect: dependencies.effect
  }
}

const installed = (project: string) =>
  fs.readdirSync(path.join(project, "node_modules", "@parley")).map((name) => `@parley/${name}`).sort()

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
    "install as getting started says, outside the repository, and run the README's programs; every package installs",
    () =>
      Effect.gen(function*() {
        assert.isAtLeast(Number(process.versions.node.split(".")[0]), 24, "the programs below run on Node 24")
        const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-install-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(work, { recursive: true, force: true })))
        const app = path.join(work, "app")
        fs.mkdirSync(app)
        const env = userEnv()
        const repoEffect = (JSON.parse(fs.readFileSync(path.join(repoDir, "e2e", "package.json"), "utf8")) as {
          readonly dependencies: Record<string, string>
        }).dependencies.effect

        // the project as the page starts it: its package.json and tsconfig.json, and the README's program
        const { durable, printed, program } = readmePrograms()
        const { packageJson, tsconfigJson } = installFiles()
        fs.writeFileSync(path.join(app, "package.json"), packageJson)
        fs.writeFileSync(path.join(app, "tsconfig.json"), tsconfigJson)
        fs.writeFileSync(path.join(app, "main.ts"), program)

        // the page's commands, as written, where each says it runs
        const pageSteps = steps()
        assert.deepStrictEqual(pageSteps.map((step) => step.where), ["clone", "project", "project", "project"])
        const outputs: Array<string> = []
        for (const step of pageSteps) {
          const output = yield* run("bash", ["-ec", step.commands], {
            cwd: step.where === "clone" ? repoDir : app,
            env,
            timeout: 540_000
          }).pipe(Effect.mapError((error) => new Error(`docs/getting-started.md:${step.line}: ${error.message}`)))
          outputs.push(output.stdout)
          if (/^npm install .*parley-\{core,/m.test(step.commands)) {
            // what "A taste" imports, with what runtime depends on; effect at the repository's exact version
            const parley = ["core", "log", "policy", "runtime", "testing", "tools"].map((name) => `@parley/${name}`)
            assert.deepStrictEqual(dependenciesOf(app), { parley, effect: repoEffect })
            assert.deepStrictEqual(installed(app), parley)
          }
          if (step.commands.includes("node dist/main.js")) {
            assert.strictEqual(
              output.stdout,
              printed,
              `docs/getting-started.md:${step.line} prints what "A taste" prints`
            )
          }
        }

        // npm run pack: quiet (a line per tarball), every package built and packed, nothing but the build in each
        const [packOutput] = outputs
        assert.notInclude(packOutput, "npm notice")
        const said = packOutput.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("> "))
        assert.strictEqual(said.length, packages.length + 1, packOutput) // npm's banner, a line per tarball, the sum
        const tarballs = path.join(repoDir, "parley-packages")
        assert.deepStrictEqual(
          fs.readdirSync(tarballs).filter((file) => file.endsWith(".tgz")).sort(),
          packages.map((name) => `parley-${name}-0.1.0.tgz`).sort()
        )
        for (const name of packages) {
          const listed = yield* run("tar", ["-tzf", path.join(tarballs, `parley-${name}-0.1.0.tgz`)], {
            cwd: work,
            env
          })
          const paths = listed.stdout.trim().split("\n").map((file) => file.replace(/^package\//, ""))
          assert.include(paths, "dist/index.js", name)
          assert.include(paths, "dist/index.d.ts", name)
          assert.isFalse(paths.some((file) => file.startsWith("src/") || file.startsWith("test/")), name)
        }

        // the durable step added @parley/store-sql; the README's durable program runs there, on a SQLite file
        assert.include(dependenciesOf(app).parley, "@parley/store-sql")
        assert.include(installed(app), "@parley/store-sql")
        assert.isFalse(fs.existsSync(path.join(app, ".parley")), "in memory: no file")
        fs.writeFileSync(path.join(app, "durable.ts"), durable)
        yield* run("npx", ["tsc"], { cwd: app, env })
        const durableRun = yield* run("node", [path.join("dist", "durable.js")], { cwd: app, env })
        assert.strictEqual(durableRun.stdout, printed)
        assert.isTrue(fs.existsSync(path.join(app, ".parley", "sessions.db")), "the SQLite file, its folder created")
        // SQLite is Node's own node:sqlite: no SQLite addon is installed, none is built
        const addons = yield* run("find", ["node_modules", "-iname", "*sqlite*.node"], { cwd: app, env })
        assert.strictEqual(addons.stdout.trim(), "", "no native SQLite addon in the project")
        assert.isFalse(fs.existsSync(path.join(app, "node_modules", "better-sqlite3")), "no SQLite driver of its own")

        // every tarball installs, in a project of its own: each package imports, internals stay blocked, parley runs
        const all = path.join(work, "all")
        fs.mkdirSync(all)
        fs.writeFileSync(path.join(all, "package.json"), packageJson)
        fs.writeFileSync(path.join(all, "tsconfig.json"), tsconfigJson)
        fs.writeFileSync(path.join(all, "every-package.ts"), everyPackage())
        const typesNode = (JSON.parse(fs.readFileSync(path.join(repoDir, "package.json"), "utf8")) as {
          readonly devDependencies: Record<string, string>
        }).devDependencies["@types/node"]
        yield* run(
          "npm",
          [
            "install",
            "--save-exact",
            `effect@${repoEffect}`,
            ...packages.map((name) => path.join(tarballs, `parley-${name}-0.1.0.tgz`)),
            `@types/node@${typesNode}`
          ],
          { cwd: all, env, timeout: 540_000 }
        )
        assert.deepStrictEqual(installed(all), packages.map((name) => `@parley/${name}`))
        assert.isFalse(fs.lstatSync(path.join(all, "node_modules", "@parley", "core")).isSymbolicLink(), "a copy")
        const tsc = path.join(repoDir, "node_modules", "typescript", "bin", "tsc")
        yield* run("node", [tsc, "-p", "tsconfig.json"], { cwd: all, env })
        const every = yield* run("node", [path.join("dist", "every-package.js")], { cwd: all, env })
        const lines = every.stdout.trim().split("\n")
        assert.include(lines.find((line) => line.startsWith("core ")), "Agent")
        assert.include(lines.find((line) => line.startsWith("runtime ")), "LocalTransport")
        assert.include(lines.find((line) => line.startsWith("testing ")), "ScriptedModel")
        assert.include(lines.find((line) => line.startsWith("store_sql ")), "SqlRuntime")
        assert.include(lines, "Turn.answer function")
        assert.include(lines, "internal: ERR_PACKAGE_PATH_NOT_EXPORTED")
        // the parley command, installed: its bin runs the package's build
        const parley = path.join("node_modules", ".bin", "parley")
        const help = yield* run("node", [parley, "--help"], { cwd: all, env })
        assert.include(help.stdout, "See what waits in Parley sessions")
        const unreachable = yield* run(
          "node",
          [parley, "callbacks", "list", "--url", "http://127.0.0.1:9", "--key", "k"],
          { cwd: all, env }
        ).pipe(Effect.flip)
        assert.include(String(unreachable), "cannot reach a Parley server at http://127.0.0.1:9")
      }).pipe(Effect.scoped),
    { timeout: 1_200_000 }
  )
})
