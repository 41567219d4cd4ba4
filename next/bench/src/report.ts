/**
 * The bench's output: sections of rows, each a measured value against its target (if it has one) with a pass / miss
 * mark, printed as a Markdown table (so a run can be pasted into `BASELINE.md` or a README as is).
 */
import { Option } from "effect"

export interface Row {
  readonly name: string
  readonly measured: string
  /** Empty when the row has no target. */
  readonly target: string
  /** Whether the target is met; none when the row has no target. */
  readonly met: Option.Option<boolean>
}

export interface Section {
  readonly title: string
  readonly rows: ReadonlyArray<Row>
}

// ----------------------------------------------------------------------------
// Units
// ----------------------------------------------------------------------------

const KIB = 1024
const MIB = 1024 * KIB
const GIB = 1024 * MIB

export const ms = (value: number): string => `${value.toFixed(value < 10 ? 3 : 1)} ms`
export const seconds = (value: number): string => `${value.toFixed(value < 10 ? 3 : 1)} s`
export const kib = (bytes: number): string => `${(bytes / KIB).toFixed(2)} KB`
export const mib = (bytes: number): string =>
  bytes >= GIB ? `${(bytes / GIB).toFixed(2)} GiB` : `${(bytes / MIB).toFixed(0)} MiB`
export const count = (value: number): string => Math.round(value).toLocaleString("en-US")
export const micros = (value: number): string => `${value.toFixed(1)} µs`
/** Wall-clock µs, and the CPU µs of the process in brackets. */
export const perCall = (value: { readonly wall: number; readonly cpu: number }): string =>
  `${micros(value.wall)} (CPU ${micros(value.cpu)})`

// ----------------------------------------------------------------------------
// Rows
// ----------------------------------------------------------------------------

/** A row with no target. */
export const info = (name: string, measured: string): Row => ({ name, measured, target: "", met: Option.none() })

/** A row whose value must be at most `limit` (`format` prints both). */
export const atMost = (name: string, value: number, limit: number, format: (n: number) => string): Row => ({
  name,
  measured: format(value),
  target: `≤ ${format(limit)}`,
  met: Option.some(value <= limit)
})

/** A row whose value must be at least `limit`. */
export const atLeast = (name: string, value: number, limit: number, format: (n: number) => string): Row => ({
  name,
  measured: format(value),
  target: `≥ ${format(limit)}`,
  met: Option.some(value >= limit)
})

/** A row that could not be measured here (why, in `measured`); its target is shown but not judged. */
export const unmeasured = (name: string, why: string, target: string): Row => ({
  name,
  measured: why,
  target,
  met: Option.none()
})

// ----------------------------------------------------------------------------
// Rendering
// ----------------------------------------------------------------------------

const mark = (row: Row): string =>
  Option.match(row.met, { onNone: () => "", onSome: (met) => (met ? "pass" : "**miss**") })

/** The sections as one Markdown table (a section is a bold row of its own), then a pass / miss count. */
export const render = (sections: ReadonlyArray<Section>): string => {
  const lines: Array<ReadonlyArray<string>> = [["row", "measured", "target", ""]]
  for (const section of sections) {
    lines.push([`**${section.title}**`, "", "", ""])
    for (const row of section.rows) lines.push([row.name, row.measured, row.target, mark(row)])
  }
  const widths = lines[0].map((_, column) => Math.max(...lines.map((line) => line[column].length)))
  const format = (line: ReadonlyArray<string>) => `| ${line.map((cell, i) => cell.padEnd(widths[i])).join(" | ")} |`
  const judged = sections.flatMap((section) => section.rows.flatMap((row) => Option.toArray(row.met)))
  return [
    format(lines[0]),
    `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`,
    ...lines.slice(1).map(format),
    "",
    `${judged.filter((met) => met).length} of ${judged.length} targets met.`
  ].join("\n")
}
