/**
 * `cluster/single.ts` (`@parley/cluster` in one process) prints what `expected-output.txt` says: the turn blocks on
 * its approval, the answer by id reaches the tree's entity, the runner runs the tool, the turn completes.
 * `cluster/client.ts` (a client-only process beside a runner, on a fresh schema of the test PostgreSQL database) prints
 * what `client-output.txt` says: the client's turn is run by the runner, and the client holds nothing.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Ports } from "@parley/testing"
import { FileSystem } from "effect"
import { Console, Context, Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Client from "../cluster/client.js"
import { program, runtime } from "../cluster/single.js"

const expected = fs.readFileSync(path.join(import.meta.dirname, "..", "cluster", "expected-output.txt"), "utf8")

describe("cluster/single.ts", () => {
  it.effect("prints expected-output.txt", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped())
      const lines: Array<string> = []
      const console = yield* Console.Console
      const capture: Console.Console = { ...console, log: (...args) => void lines.push(args.join(" ")) }
      yield* program.pipe(
        Effect.provide(runtime(path.join(directory, "sessions.db"))),
        Effect.provideService(Console.Console, capture)
      )
      assert.strictEqual(lines.map((line) => `${line}\n`).join(""), expected)
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

/** A fresh schema of the test PostgreSQL database (dropped with the scope); the URL returned selects it. */
const pgSchema = Effect.gen(function*() {
  const base = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"
  const schema = `x_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  const admin = yield* Layer.build(PgClient.layer({ url: Redacted.make(base), maxConnections: 1 }))
  const sql = Context.get(admin, PgClient.PgClient)
  yield* Effect.acquireRelease(
    sql`CREATE SCHEMA ${sql(schema)}`,
    () => Effect.ignore(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
  )
  return `${base}${base.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`
})

const clientExpected = fs.readFileSync(
  path.join(import.meta.dirname, "..", "cluster", "client-output.txt"),
  "utf8"
)

describe("cluster/client.ts", () => {
  it.live("prints client-output.txt: a client's turn, run by the runner", () =>
    Effect.gen(function*() {
      const url = yield* pgSchema
      const models = yield* Client.scriptedModels
      const lines: Array<string> = []
      const console = yield* Console.Console
      const capture: Console.Console = { ...console, log: (...args) => void lines.push(args.join(" ")) }
      // The runner's tool prints too (in its own fibers): the console is captured before the runner starts.
      yield* Effect.gen(function*() {
        yield* Layer.build(Client.runner(url, yield* Ports.one, models))
        yield* Client.program.pipe(Effect.provide(Client.client(url, models)), Effect.timeout("60 seconds"))
      }).pipe(Effect.provideService(Console.Console, capture))
      assert.strictEqual(lines.map((line) => `${line}\n`).join(""), clientExpected)
    }).pipe(Effect.scoped), 90_000)
})
