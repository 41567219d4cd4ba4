/**
 * Facts the docs state about the code, read out of the Markdown so that `docFacts.test.ts` can hold each one against
 * the code: the event schema version the docs say events are written at, the packages the README's table lists, and
 * the commands (with their flags) the CLI's README documents.
 *
 * Each fact keeps where it was read (`file:line`), so that a failing check names the line to fix.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** A statement of the docs: where it is (`file:line`), and what it says. */
export interface Claim<A> {
  readonly where: string
  readonly value: A
}

/** The one-based line of `index` in `text`. */
const lineOf = (text: string, index: number): number => text.slice(0, index).split("\n").length

const markdownUnder = (repoDir: string, dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(repoDir, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? markdownUnder(repoDir, path.join(dir, entry.name))
      : entry.name.endsWith(".md")
      ? [path.join(dir, entry.name)]
      : []
  ).sort()

/**
 * The pages that state what holds now: the README, CONTRIBUTING, everything under `docs/`, and the READMEs of the
 * packages, the examples and the bench. Not `bench/RESULTS.md`: a history, whose every line was true when written.
 */
export const currentPages = (repoDir: string): ReadonlyArray<string> => [
  "README.md",
  "CONTRIBUTING.md",
  ...markdownUnder(repoDir, "docs"),
  ...fs.readdirSync(path.join(repoDir, "packages")).sort().map((name) => `packages/${name}/README.md`)
    .filter((file) => fs.existsSync(path.join(repoDir, file))),
  ...markdownUnder(repoDir, "examples").filter((file) => !file.includes("node_modules")),
  "bench/README.md"
]

/**
 * The schema version a page says events are written at now: "written at schema version 4", "written at event schema
 * version 4", or "`TurnEvent.schemaVersion` … (now 4)" (a line break may fall anywhere in the sentence).
 */
export const schemaVersionClaims = (file: string, markdown: string): ReadonlyArray<Claim<number>> => {
  const patterns = [
    /written (?:at|with) (?:event )?schema\s+version\s+(\d+)/gi,
    /`TurnEvent\.schemaVersion`[^()`]{0,120}\(now (\d+)\)/g
  ]
  return patterns.flatMap((pattern) =>
    Array.from(markdown.matchAll(pattern), (match) => ({
      where: `${file}:${lineOf(markdown, match.index)}`,
      value: Number(match[1])
    }))
  ).sort((a, b) => a.where.localeCompare(b.where, undefined, { numeric: true }))
}

/** A row of the README's package table: the package it names and the folder it links to. */
export interface PackageRow {
  readonly name: string
  readonly folder: string
}

/** The rows of the README's package table: ``| [`@parley/core`](packages/core) | … |``. */
export const packageRows = (file: string, markdown: string): ReadonlyArray<Claim<PackageRow>> =>
  Array.from(markdown.matchAll(/^\| \[`(@parley\/[^`]+)`\]\(([^)]+)\) \|/gm), (match) => ({
    where: `${file}:${lineOf(markdown, match.index)}`,
    value: { name: match[1], folder: match[2] }
  }))

/** A command the CLI's README documents: its path under `parley`, the flags and the `<arguments>` its row names. */
export interface CommandRow {
  readonly path: ReadonlyArray<string>
  readonly flags: ReadonlyArray<string>
  readonly placeholders: ReadonlyArray<string>
}

/**
 * The rows of the CLI README's command table: ``| `parley sessions show <session-id>` | … |``. The command's path is
 * its leading words; the flags are every `--name` of the cell, the placeholders every `<name>`.
 */
export const commandRows = (file: string, markdown: string): ReadonlyArray<Claim<CommandRow>> =>
  Array.from(markdown.matchAll(/^\| `parley ([^`]+)` \|/gm), (match) => {
    const words = match[1].split(/\s+/)
    const end = words.findIndex((word) => !/^[a-z][a-z-]*$/.test(word))
    return {
      where: `${file}:${lineOf(markdown, match.index)}`,
      value: {
        path: end === -1 ? words : words.slice(0, end),
        flags: Array.from(match[1].matchAll(/--([a-z][a-z-]*)/g), (flag) => flag[1]),
        placeholders: Array.from(match[1].matchAll(/<([a-z][a-z-]*)>/g), (placeholder) => placeholder[1])
      }
    }
  })

/** The flags a page names outside its command table (the options every command shares, said once in prose). */
export const proseFlags = (markdown: string): ReadonlyArray<string> =>
  Array.from(
    markdown.split("\n").filter((line) => !line.startsWith("| `parley ")).join("\n").matchAll(/`--([a-z][a-z-]*)/g),
    (match) => match[1]
  )
