/**
 * The docs say what the code does: each fact a page states about the code (see `docFacts.ts`) is read out of the
 * Markdown and held against the code itself — the event schema version against `TurnEvent.schemaVersion`, the
 * README's package table against `packages/*`, the CLI README's commands and flags against the `parley` parser
 * (`Cli.command()`, read with `effect/cli`'s `CommandSpec`). A page that drifts fails here, at its line.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cli } from "@parley/cli"
import { TurnEvent } from "@parley/core"
import { Option } from "effect"
import { CommandSpec } from "effect/cli"
import * as fs from "node:fs"
import * as path from "node:path"
import * as DocFacts from "./docFacts.js"
import { repoDir } from "./processes.js"

const read = (file: string) => fs.readFileSync(path.join(repoDir, file), "utf8")

describe("the event schema version the docs state", () => {
  it("is the one core writes, on every page that states it", () => {
    const claims = DocFacts.currentPages(repoDir).flatMap((file) => DocFacts.schemaVersionClaims(file, read(file)))
    const where = claims.map((claim) => claim.where.split(":")[0])
    assert.includeMembers(where, [
      "docs/guides/approvals-in-depth.md",
      "docs/architecture/event-log.md",
      "packages/store-sql/README.md"
    ])
    assert.deepStrictEqual(
      claims.filter((claim) => claim.value !== TurnEvent.schemaVersion).map((claim) =>
        `${claim.where}: says ${claim.value}`
      ),
      [],
      `events are written at schema version ${TurnEvent.schemaVersion}`
    )
  })

  it("is read from each way a page says it, at its line", () => {
    const page =
      "# Old\n\nEvents are now written at schema\nversion 3.\n\nThe store records `TurnEvent.schemaVersion`\n" +
      "with every event (now 2). Version 2 added `answeredBy`.\n"
    assert.deepStrictEqual(DocFacts.schemaVersionClaims("old.md", page), [
      { where: "old.md:3", value: 3 },
      { where: "old.md:6", value: 2 }
    ])
  })
})

describe("the README's package table", () => {
  const packages = fs.readdirSync(path.join(repoDir, "packages")).filter((name) =>
    fs.existsSync(path.join(repoDir, "packages", name, "package.json"))
  ).sort()

  it("lists every package under packages/, once, by its package.json name, linked to its folder", () => {
    const rows = DocFacts.packageRows("README.md", read("README.md"))
    assert.isAtLeast(packages.length, 14)
    assert.includeMembers(packages, ["cli", "cluster", "telemetry"])
    assert.deepStrictEqual(rows.map((row) => row.value.folder).sort(), packages.map((name) => `packages/${name}`))
    for (const row of rows) {
      const manifest = JSON.parse(read(path.join(row.value.folder, "package.json"))) as { readonly name: string }
      assert.strictEqual(row.value.name, manifest.name, row.where)
    }
  })

  it("is read row by row", () => {
    const table = "| package | what |\n|---|---|\n| [`@parley/core`](packages/core) | the domain |\n" +
      "| [`examples`](examples) | programs |\n| [`@parley/log`](packages/log) | the log |\n"
    assert.deepStrictEqual(DocFacts.packageRows("t.md", table), [
      { where: "t.md:3", value: { name: "@parley/core", folder: "packages/core" } },
      { where: "t.md:5", value: { name: "@parley/log", folder: "packages/log" } }
    ])
  })
})

describe("the CLI's documented commands", () => {
  const root = Cli.command()
  const specOf = (commandPath: ReadonlyArray<string>) => CommandSpec.resolve(root, ["parley", ...commandPath])

  /** Every command the parser runs (its leaves: a command with subcommands only shows its help). */
  const leaves = (commandPath: ReadonlyArray<string> = []): ReadonlyArray<ReadonlyArray<string>> => {
    const spec = Option.getOrThrow(specOf(commandPath))
    return spec.subcommands.length === 0
      ? [commandPath]
      : spec.subcommands.flatMap((subcommand) => leaves([...commandPath, subcommand.name]))
  }

  const readme = read("packages/cli/README.md")
  const rows = DocFacts.commandRows("packages/cli/README.md", readme)

  it("are the parser's commands, each documented once", () => {
    assert.deepStrictEqual(
      rows.map((row) => row.value.path.join(" ")).sort(),
      leaves().map((commandPath) => commandPath.join(" ")).sort()
    )
    assert.includeMembers(leaves().map((commandPath) => commandPath.join(" ")), ["serve", "callbacks list", "demo"])
  })

  it("name only flags the parser takes, and the parser takes none the README does not name", () => {
    const shared = DocFacts.proseFlags(readme)
    for (const row of rows) {
      const spec = Option.getOrThrow(specOf(row.value.path))
      const flags = spec.flags.filter((flag) => flag.scope._tag === "Local").map((flag) => flag.name)
      const unknown = row.value.flags.filter((flag) => !flags.includes(flag))
      assert.deepStrictEqual(unknown, [], `${row.where}: parley ${row.value.path.join(" ")} takes no such flag`)
      const undocumented = flags.filter((flag) => !row.value.flags.includes(flag) && !shared.includes(flag))
      assert.deepStrictEqual(undocumented, [], `${row.where}: parley ${row.value.path.join(" ")} takes them`)
      for (const argument of spec.arguments) {
        if (/^[a-z-]+$/.test(argument.name)) {
          assert.include(row.value.placeholders, argument.name, `${row.where}: the <${argument.name}> argument`)
        }
      }
    }
  })

  it("are the commands the README's package table names for @parley/cli", () => {
    const row = read("README.md").split("\n").find((line) => line.startsWith("| [`@parley/cli`]"))
    assert.isDefined(row)
    // "the `parley` command: `serve`, `sessions`, …, `cluster status`, `demo`"
    const commands = (row ?? "").split(" | ")[1].split(": ").slice(1).join(": ")
    const named = Array.from(commands.matchAll(/`([a-z]+)[^`]*`/g), (match) => match[1])
    assert.deepStrictEqual(
      Array.from(new Set(named)),
      Array.from(new Set(leaves().map((commandPath) => commandPath[0])))
    )
  })

  it("are read from the table: path, flags and arguments", () => {
    const table = "| command | what |\n|---|---|\n" +
      "| `parley sessions show <session-id> [--json]` | a session |\n" +
      "| `parley answer <callback-id> allow \\| deny [--reason …]` | answers |\n"
    assert.deepStrictEqual(DocFacts.commandRows("t.md", table), [
      { where: "t.md:3", value: { path: ["sessions", "show"], flags: ["json"], placeholders: ["session-id"] } },
      { where: "t.md:4", value: { path: ["answer"], flags: ["reason"], placeholders: ["callback-id"] } }
    ])
    assert.deepStrictEqual(DocFacts.proseFlags(`${table}\nEvery command takes \`--url\` and \`--key\`.\n`), [
      "url",
      "key"
    ])
  })
})
