// Type-checks one workspace (its src and test) on its own, reading sibling packages from their sources, with no
// project references (so a sibling that does not compile yet does not stop the check). Prints the errors of that
// workspace's own files first, then a count of the errors elsewhere.
//   node scripts/check-one.mjs packages/runtime [--all]
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
const dir = path.resolve(process.argv[2])
const all = process.argv.includes("--all")
const base = JSON.parse(fs.readFileSync(path.join(dir, "tsconfig.json"), "utf8"))
const tmp = path.join(dir, "tsconfig.check.tmp.json")
fs.writeFileSync(tmp, JSON.stringify({
  extends: "./tsconfig.json",
  compilerOptions: { composite: false, incremental: false, noEmit: true, rootDir: process.cwd(), declaration: false, declarationMap: false, emitDeclarationOnly: false, tsBuildInfoFile: null },
  include: base.include ?? ["src", "test"],
  references: []
}))
const r = spawnSync(process.execPath, [path.resolve("node_modules/typescript/bin/tsc"), "-p", tmp, "--pretty", "false"], { encoding: "utf8", maxBuffer: 1 << 28 })
fs.rmSync(tmp)
const lines = (r.stdout + r.stderr).split("\n").filter((l) => /error TS/.test(l))
const rel = path.relative(process.cwd(), dir) + "/"
const own = lines.filter((l) => l.startsWith(rel))
const other = lines.filter((l) => !l.startsWith(rel))
for (const l of all ? lines : own) console.log(l)
console.log(`${own.length} errors in ${rel}, ${other.length} elsewhere`)
