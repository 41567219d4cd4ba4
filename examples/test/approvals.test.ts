/**
 * `approvals/in-depth.ts` (the "Approvals in depth" guide's program) prints what the guide shows: an edited approval,
 * a remembered grant deciding the next call, the audit of who decided, and a revoked grant asking again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { program, Runtime } from "../approvals/in-depth.js"

const expected = fs.readFileSync(path.join(import.meta.dirname, "..", "approvals", "expected-output.txt"), "utf8")

describe("approvals/in-depth.ts", () => {
  it.effect("prints expected-output.txt", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const console = yield* Console.Console
      const capture: Console.Console = { ...console, log: (...args) => void lines.push(args.join(" ")) }
      yield* program.pipe(Effect.provide(Runtime), Effect.provideService(Console.Console, capture))
      assert.strictEqual(lines.map((line) => `${line}\n`).join(""), expected)
    }))
})
