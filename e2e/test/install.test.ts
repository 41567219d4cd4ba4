/**
 * The packages install and run outside this repository, as a new user gets them: `npm pack` every package (its
 * `prepack` builds it), install the tarballs into a fresh project in a temporary directory, type-check the README's
 * "A taste" program there (against the packages' `.d.ts`, library checks on) and run it with plain `node` on the
 * packages' JS. It must print what the README says it prints.
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

const packages = ["core", "policy", "tools", "runtime", "testing", "mistral"]

/** The README's "A taste" program (its first ts block), and what the README says it prints (the next block). */
const readmeProgram = () => {
  const readme = fs.readFileSync(path.join(repoDir, "README.md"), "utf8")
  const [taste] = Snippets.blocksOf(repoDir, "README.md")
  const after = readme.slice(readme.indexOf(taste.code) + taste.code.length + "```".length) // past its fence
  const printed = /^```\n([\s\S]*?)^```$/m.exec(after)?.[1] ?? ""
  return { program: taste.code, printed }
}

/** Imports every package, a deep import, and tries an internal module (which `exports` blocks). */
const everyPackage = `${packages.map((name) => `import * as ${name} from "@parley/${name}"`).join("\n")}
import * as Turn from "@parley/core/Turn"

const namespaces = { ${packages.join(", ")} }
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
    "install into a project outside the repository, type-check and run the README program",
    () =>
      Effect.gen(function*() {
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

        // a fresh project, outside the repository
        const { printed, program } = readmeProgram()
        const rootManifest = JSON.parse(fs.readFileSync(path.join(repoDir, "package.json"), "utf8"))
        fs.writeFileSync(
          path.join(app, "package.json"),
          JSON.stringify({ name: "fresh-app", private: true, type: "module", allowScripts: rootManifest.allowScripts })
        )
        fs.writeFileSync(
          path.join(app, "tsconfig.json"),
          JSON.stringify({
            compilerOptions: {
              strict: true,
              module: "NodeNext",
              moduleResolution: "NodeNext",
              target: "ES2022",
              lib: ["ES2022"],
              types: ["node"],
              skipLibCheck: false,
              outDir: "out"
            },
            include: ["*.ts"]
          })
        )
        fs.writeFileSync(path.join(app, "main.ts"), program)
        fs.writeFileSync(path.join(app, "every-package.ts"), everyPackage)
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
        const installed = fs.readdirSync(path.join(app, "node_modules", "@parley")).sort()
        assert.deepStrictEqual(installed, [...packages].sort())
        assert.isFalse(
          fs.lstatSync(path.join(app, "node_modules", "@parley", "core")).isSymbolicLink(),
          "a copy, not a link"
        )

        // type-check (the packages' .d.ts, with library checks) and emit JS, with the repository's TypeScript
        const tsc = path.join(repoDir, "node_modules", "typescript", "bin", "tsc")
        yield* run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, env: outsideEnv() })

        // run with plain node: the packages' dist/ JS, no source condition, no loader
        const taste = yield* run(process.execPath, [path.join("out", "main.js")], { cwd: app, env: outsideEnv() })
        assert.strictEqual(taste.stdout, printed)
        const every = yield* run(process.execPath, [path.join("out", "every-package.js")], {
          cwd: app,
          env: outsideEnv()
        })
        const lines = every.stdout.trim().split("\n")
        assert.include(lines.find((line) => line.startsWith("core ")), "Agent")
        assert.include(lines.find((line) => line.startsWith("runtime ")), "LocalTransport")
        assert.include(lines.find((line) => line.startsWith("testing ")), "ScriptedModel")
        assert.include(lines, "Turn.answer function")
        assert.include(lines, "internal: ERR_PACKAGE_PATH_NOT_EXPORTED")
      }).pipe(Effect.scoped),
    { timeout: 600_000 }
  )
})
