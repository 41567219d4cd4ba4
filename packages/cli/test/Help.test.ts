/**
 * The help of every command of the tree (walked from `Cli.command()`, so a command added later is checked too), as
 * the real `parley` executable prints it: a description, the usage line of `parley <command>`, examples of it, a
 * description for every argument, flag and subcommand, and none of a parser's placeholders — the texts
 * `effect/cli`'s help shows when a command says nothing of itself (a bare type for a value: `--url string`), and the
 * boilerplate of the parsers before it ("A user-defined piece of text.", "This setting is optional.", `$ answer`).
 * Colours only on a terminal: never into a pipe, and not with `NO_COLOR`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cli } from "@parley/cli"
import { Effect } from "effect"
import * as Fixture from "./fixtures/server.js"

interface Node {
  readonly name: string
  readonly subcommands: ReadonlyArray<{ readonly commands: ReadonlyArray<Node> }>
}

/** Every command path of the tree under `parley` (`[]` is `parley` itself). */
const paths = (node: Node, prefix: ReadonlyArray<string> = []): ReadonlyArray<ReadonlyArray<string>> => [
  prefix,
  ...node.subcommands.flatMap((group) => group.commands.flatMap((child) => paths(child, [...prefix, child.name])))
]

const commandPaths = paths(Cli.command())

/** An ANSI escape sequence. */
const ansi = /\x1b\[/ // eslint-disable-line no-control-regex
const bold = (text: string) => new RegExp(`\\u001b\\[1m${text}\\u001b\\[0m`)

const placeholders = [
  /A user-defined piece of text/i,
  /This setting is optional/i,
  /^\s*\$ /m,
  /Sets the minimum log level/,
  /Start wizard mode/
]

/** A value's bare type where a name for it belongs (`--url string`, `--port integer`, `--kind choice`). */
const bareType = /^\s+--\S+(?:, -\S+)? (?:string|integer|float|number|choice|boolean|date|path|file|directory)\b/m

/** The rows of a section (`FLAGS`, `ARGUMENTS`, `SUBCOMMANDS`): its lines up to the next blank line. */
const section = (help: string, title: string): ReadonlyArray<string> => {
  const lines = help.split("\n")
  const start = lines.indexOf(title)
  if (start === -1) return []
  const end = lines.findIndex((line, index) => index > start && line.trim() === "")
  return lines.slice(start + 1, end === -1 ? undefined : end)
}

/** A table row's right column: what follows the name after two or more spaces. */
const describedBy = (row: string) => /^\s+\S.*?\S? {2,}(\S.*)$/.exec(row)?.[1]

describe("parley --help", { concurrent: false }, () => {
  it("walks every command: the root, its groups and their subcommands", () => {
    const names = commandPaths.map((path) => path.join(" "))
    for (const expected of ["", "serve", "answer", "sessions show", "callbacks list", "grants list", "grants revoke"]) {
      assert.include(names, expected)
    }
  })

  it.live(
    "every command: a description, `parley …` usage, examples, every row described, no placeholder",
    () =>
      Effect.forEach(commandPaths, (path) =>
        Effect.gen(function*() {
          const name = ["parley", ...path].join(" ")
          const { code, stderr, stdout: help } = yield* Fixture.parley([...path, "--help"])
          assert.strictEqual(code, 0, `${name}: ${stderr}`)
          assert.notMatch(help, ansi, `${name}: no colour into a pipe`)

          const description = section(help, "DESCRIPTION")
          assert.isAbove(description.join(" ").trim().length, 20, `${name}: a description`)
          const usage = section(help, "USAGE")
          assert.strictEqual(usage.length, 1, `${name}: one usage line`)
          assert.isTrue(usage[0].trim().startsWith(name), `${name}: usage "${usage[0].trim()}"`)

          // The last section: its examples are set apart by blank lines.
          const examples = (help.split("\nEXAMPLES\n")[1] ?? "").split("\n")
            .map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))
          assert.isAbove(examples.length, 0, `${name}: examples`)
          for (const example of examples) {
            assert.isTrue(example.startsWith(name), `${name}: example "${example}" runs ${name}`)
          }

          for (const title of ["ARGUMENTS", "FLAGS", "SUBCOMMANDS"]) {
            for (const row of section(help, title)) {
              const text = describedBy(row)
              assert.isDefined(text, `${name}: ${title} row "${row.trim()}" has a description`)
              assert.isAbove(text!.replace("(optional)", "").trim().length, 8, `${name}: "${row.trim()}" described`)
            }
          }
          assert.notMatch(help, bareType, `${name}: a value is named, not typed`)
          for (const placeholder of placeholders) assert.notMatch(help, placeholder, `${name}: ${placeholder}`)
        }), { concurrency: 3, discard: true }),
    { timeout: 240_000 }
  )

  it.live("the placeholder check fails on a parser's placeholder text", () =>
    Effect.sync(() => {
      assert.match("  --url string    The server's URL.", bareType)
      assert.match("  --port integer", bareType)
      assert.notMatch("  --url URL    The server's URL.", bareType)
      assert.isUndefined(describedBy("  --failure"))
      assert.strictEqual(describedBy("  --failure    With --result: a tool error."), "With --result: a tool error.")
      assert.isTrue(placeholders.some((placeholder) => placeholder.test("This setting is optional.")))
      assert.isTrue(placeholders.some((placeholder) => placeholder.test("USAGE\n  $ answer")))
    }))

  it.live(
    "colours only when asked for on a terminal's behalf: FORCE_COLOR colours, NO_COLOR wins",
    () =>
      Effect.gen(function*() {
        const forced = yield* Fixture.parley(["answer", "--help"], { FORCE_COLOR: "1" })
        assert.match(forced.stdout, bold("DESCRIPTION"))
        const none = yield* Fixture.parley(["answer", "--help"], { FORCE_COLOR: "1", NO_COLOR: "1" })
        assert.notMatch(none.stdout, ansi)
        const dumb = yield* Fixture.parley(["answer", "--help"], { FORCE_COLOR: "1", TERM: "dumb" })
        assert.notMatch(dumb.stdout, ansi)
      }),
    { timeout: 60_000 }
  )
})
