/**
 * `Snippets.check` in a process of its own (the TypeScript compiler runs for tens of seconds without yielding: in the
 * test's worker it would stall the worker's messages to vitest). Argument (JSON): `{ files, workDir }`; prints the
 * problems as JSON on stdout.
 */
import * as path from "node:path"
import * as Snippets from "./snippets.js"

const { files, workDir } = JSON.parse(process.argv[2] ?? "{}") as {
  readonly files: ReadonlyArray<string>
  readonly workDir: string
}
const repoDir = path.resolve(import.meta.dirname, "..", "..")
process.stdout.write(JSON.stringify(Snippets.check(repoDir, files, workDir)))
