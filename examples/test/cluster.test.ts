/**
 * `cluster/single.ts` (`@parley/cluster` in one process) prints what `expected-output.txt` says: the turn blocks on
 * its approval, the answer by id reaches the tree's entity, the runner runs the tool, the turn completes.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { program, runtime } from "../cluster/single.js"

const expected = fs.readFileSync(path.join(import.meta.dirname, "..", "cluster", "expected-output.txt"), "utf8")

describe("cluster/single.ts", () => {
  it.scoped("prints expected-output.txt", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped())
      const lines: Array<string> = []
      const console = yield* Console.consoleWith(Effect.succeed)
      const capture: Console.Console = { ...console, log: (...args) => Effect.sync(() => lines.push(args.join(" "))) }
      yield* program.pipe(Effect.provide(runtime(path.join(directory, "sessions.db"))), Effect.withConsole(capture))
      assert.strictEqual(lines.map((line) => `${line}\n`).join(""), expected)
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
