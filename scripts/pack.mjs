/**
 * `npm run pack [-- <folder>]`: packs every package under `packages/` into one folder, `parley-packages/` at the
 * repository root unless another is given, each built first by its `prepack` (`tsc -b`; the server's also builds its
 * web app). The folder is emptied of earlier tarballs first. Quiet: npm's notices (a line per file of every package)
 * and the build scripts' banners are not shown; it prints one line per tarball, and everything when it fails.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import process from "node:process"

const repoDir = path.resolve(import.meta.dirname, "..")
const destination = path.resolve(process.cwd(), process.argv[2] ?? path.join(repoDir, "parley-packages"))

/** Runs a command in the repository; its output is shown only when it fails. */
const run = (command, args) => {
  const result = spawnSync(command, args, { cwd: repoDir, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
  if (result.status !== 0) {
    process.stderr.write(`${command} ${args.join(" ")} failed\n${result.stdout ?? ""}${result.stderr ?? ""}`)
    process.exit(result.status ?? 1)
  }
  return result.stdout
}

// Every public package: the ones `npm run build` builds (`tsconfig.build.json` references each).
const build = JSON.parse(fs.readFileSync(path.join(repoDir, "tsconfig.build.json"), "utf8"))
const packages = build.references.map((reference) => path.dirname(path.join(repoDir, reference.path)))

fs.mkdirSync(destination, { recursive: true })
for (const file of fs.readdirSync(destination)) {
  if (file.endsWith(".tgz")) fs.rmSync(path.join(destination, file))
}

const packed = JSON.parse(
  run("npm", [
    "pack",
    "--json",
    "--loglevel=warn",
    "--pack-destination",
    destination,
    ...packages.flatMap((folder) => ["--workspace", folder])
  ])
)

const shown = path.relative(process.cwd(), destination) || "."
for (const tarball of packed) {
  process.stdout.write(
    `${path.join(shown, tarball.filename)}  ${tarball.name}  ${(tarball.size / 1024).toFixed(0)} KiB\n`
  )
}
process.stdout.write(`${packed.length} packages packed into ${shown}${path.sep}\n`)
