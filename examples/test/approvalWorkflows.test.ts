/**
 * `approval-workflows/conditions.ts` (the "Approval workflows" guide's program) prints what the guide shows: a policy
 * with slips refused at load, a rule on the arguments deciding alone, a grant scoped to a domain answering the next
 * call there and no other.
 */
import { assert, describe, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { program, Runtime } from "../approval-workflows/conditions.js"

const folder = path.join(import.meta.dirname, "..", "approval-workflows")
const expected = fs.readFileSync(path.join(folder, "expected-output.txt"), "utf8")
const guide = fs.readFileSync(
  path.join(import.meta.dirname, "..", "..", "docs", "guides", "approval-workflows.md"),
  "utf8"
)

describe("approval-workflows/conditions.ts", () => {
  it.effect("prints expected-output.txt, which the guide shows as its output", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const console = yield* Console.Console
      const capture: Console.Console = { ...console, log: (...args) => void lines.push(args.join(" ")) }
      yield* program.pipe(Effect.provide(Runtime), Effect.provideService(Console.Console, capture))
      assert.strictEqual(lines.map((line) => `${line}\n`).join(""), expected)
      assert.include(guide, `\`\`\`text\n${expected}\`\`\``)
    }))
})
