/**
 * Summarises a `.cpuprofile` (from `node --cpu-prof`): self time by part (garbage collector, Effect's runtime, Effect's
 * modules, `@effect/ai`, Parley), then the frames with the most self time and the most inclusive time, as percentages
 * of the busy samples (idle, `(program)` and module-loading samples are left out, so a short profile is not dominated
 * by start-up).
 *
 * Usage: `npx tsx bench/src/cpuprofile.ts <file.cpuprofile> [rows=30]` (under `--import tsx`, Node writes a second,
 * small profile for tsx's loader thread: take the largest file).
 */
import { Cause, Console, Effect, Exit, Schema } from "effect"
import * as fs from "node:fs"

const CallFrame = Schema.Struct({ functionName: Schema.String, url: Schema.String, lineNumber: Schema.Number })

const Profile = Schema.fromJsonString(Schema.Struct({
  nodes: Schema.Array(Schema.Struct({
    id: Schema.Number,
    callFrame: CallFrame,
    children: Schema.optional(Schema.Array(Schema.Number))
  })),
  samples: Schema.Array(Schema.Number)
}))

type Frame = typeof CallFrame.Type

/** `name package/file.js:line`, relative to `node_modules` or the repository. */
const frameName = (frame: Frame): string => {
  const file = frame.url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(packages|bench|examples)\//, "$1/")
  return `${frame.functionName || "(anonymous)"} ${file}:${frame.lineNumber + 1}`
}

/**
 * Where a frame's code comes from: the garbage collector, Effect's fiber runtime and internals, Effect's other
 * modules (Schema, Stream…), `@effect/ai`, Parley's packages, or anything else.
 */
const partOf = (frame: Frame): string => {
  if (frame.functionName === "(garbage collector)") return "garbage collector"
  if (/node_modules\/effect\/dist\/esm\/internal\//.test(frame.url)) return "effect: runtime and internals"
  if (/node_modules\/effect\//.test(frame.url)) return "effect: modules (Schema, Stream, …)"
  if (/node_modules\/@effect\/ai\//.test(frame.url)) return "@effect/ai"
  if (/\/(packages|bench|examples)\//.test(frame.url) && !frame.url.includes("node_modules")) return "parley"
  return frame.url === "" ? "native" : "other"
}

const skipped = (stack: ReadonlyArray<Frame>): boolean =>
  stack[0].functionName === "(idle)" || stack[0].functionName === "(program)" ||
  stack.some((frame) => frame.url.startsWith("node:internal/modules"))

const summarise = (profile: typeof Profile.Type, rows: number): string => {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parents = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id)
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  const parts = new Map<string, number>()
  let busy = 0
  for (const sample of profile.samples) {
    const stack: Array<Frame> = []
    for (let id: number | undefined = sample; id !== undefined; id = parents.get(id)) {
      const node = nodes.get(id)
      if (node !== undefined) stack.push(node.callFrame)
    }
    if (stack.length === 0 || skipped(stack)) continue
    busy++
    const top = frameName(stack[0])
    self.set(top, (self.get(top) ?? 0) + 1)
    const part = partOf(stack[0])
    parts.set(part, (parts.get(part) ?? 0) + 1)
    for (const name of new Set(stack.map(frameName))) inclusive.set(name, (inclusive.get(name) ?? 0) + 1)
  }
  const table = (title: string, counts: Map<string, number>) => [
    `${title} (% of ${busy} busy samples of ${profile.samples.length})`,
    ...[...counts].sort((a, b) => b[1] - a[1]).slice(0, rows).map(([name, n]) =>
      `${((100 * n) / Math.max(1, busy)).toFixed(1).padStart(6)}%  ${name}`
    )
  ]
  return [
    ...table("self time by part", parts),
    "",
    ...table("self time", self),
    "",
    ...table("inclusive time", inclusive)
  ].join("\n")
}

const program = Effect.gen(function*() {
  const file = process.argv[2]
  if (file === undefined) return yield* Effect.fail(new Error("usage: cpuprofile.ts <file.cpuprofile> [rows]"))
  const text = yield* Effect.try(() => fs.readFileSync(file, "utf8"))
  const profile = yield* Schema.decodeEffect(Profile)(text)
  const rows = Number(process.argv[3] ?? 30)
  yield* Console.log(summarise(profile, Number.isInteger(rows) && rows > 0 ? rows : 30))
})

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isFailure(exit)) {
    console.error(Cause.pretty(exit.cause))
    process.exitCode = 1
  }
})
