/**
 * `parley serve --cluster host:port` (`Serve.layer` with the `cluster` setting): two servers on one PostgreSQL
 * database are runners of one cluster and serve the same sessions — a turn started through one is answered through
 * the other. A `--cluster` that is no address, or without a PostgreSQL database, is refused before anything starts.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Serve } from "@parley/cli"
import type { TurnState } from "@parley/core"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { Models } from "@parley/runtime"
import { Ports, ScriptedModel } from "@parley/testing"
import { HttpTransport } from "@parley/transport-http"
import { Config, Console, Context, Effect, Layer, Redacted } from "effect"
import * as Fixture from "./fixtures/server.js"

const pgUrl = process.env.PARLEY_TEST_PG_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"

/** A fresh schema in the test PostgreSQL database (dropped with the scope); the URL returned selects it. */
const pgSchema = Effect.gen(function*() {
  const schema = `cli_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  const admin = yield* Layer.build(PgClient.layer({ url: Redacted.make(pgUrl), maxConnections: 1 }))
  const sql = Context.get(admin, PgClient.PgClient)
  yield* Effect.acquireRelease(
    sql`CREATE SCHEMA ${sql(schema)}`,
    () => Effect.ignore(sql`DROP SCHEMA ${sql(schema)} CASCADE`)
  )
  return `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`
})

describe("parley serve --cluster", () => {
  it.live(
    "two servers on one PostgreSQL database are runners of one cluster: an answer through either",
    () =>
      Effect.gen(function*() {
        const database = yield* pgSchema
        const model = yield* ScriptedModel.fromFunction(Fixture.brain)
        const demo: Serve.Demo = {
          models: Effect.succeed(Models.single(model.languageModel)),
          agents: [Fixture.locator.spec]
        }
        const printed: Array<string> = []
        const urls: Array<string> = []
        for (let i = 0; i < 2; i++) {
          const port = yield* Ports.one
          const settings: Serve.Settings = {
            port,
            host: "127.0.0.1",
            dataDir: ".parley",
            database,
            apiKeys: `${Fixture.key}:tester`,
            logFormat: "logfmt",
            cluster: `127.0.0.1:${yield* Ports.one}`
          }
          const current = yield* Console.Console
          yield* Layer.build(Layer.orDie(Serve.layer(settings, demo))).pipe(
            Effect.provideService(Console.Console, {
              ...current,
              log: (...args) => void printed.push(args.join(" "))
            })
          )
          urls.push(`http://127.0.0.1:${port}`)
        }
        // The banner (the cluster's own "Listening on" log line may come first)
        const banner = printed.find((line) => line.startsWith("Parley server on "))
        assert.include(banner, ", a cluster runner at 127.0.0.1:")
        const through = (i: number) =>
          Effect.provide(HttpTransport.layer({ url: urls[i], apiKey: Redacted.make(Fixture.key) }))
        const turn = yield* Effect.gen(function*() {
          const session = yield* Agent.startSession(Fixture.locator)
          return yield* Session.sendMessage(session, "Where am I?")
        }).pipe(through(0))
        const blocked = (yield* Turn.result(turn).pipe(through(1))) as TurnState.Blocked
        assert.strictEqual(blocked._tag, "Blocked")
        yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval()).pipe(through(1))
        const asked = (yield* Turn.result(turn, { after: blocked }).pipe(through(0))) as TurnState.Blocked
        assert.strictEqual(asked.callbacks[0].kind, "client_tool")
        yield* Turn.answer(turn, asked.callbacks[0].id, Answer.ClientToolResult.success({ city: "Lyon" })).pipe(
          through(0)
        )
        const done = yield* Turn.result(turn, { after: asked }).pipe(through(1))
        assert.strictEqual(done._tag, "Completed")

        // `parley cluster status` (the real executable) through either server: both runners, 300 shards between them.
        const runners = [...printed.join("\n").matchAll(/a cluster runner at ([\d.]+:\d+)/g)].map((m) => m[1]).sort()
        assert.strictEqual(runners.length, 2, printed.join("\n"))
        let listed: Fixture.Result = { code: null, stdout: "", stderr: "" }
        for (let attempt = 0; attempt < 100; attempt++) {
          listed = yield* Fixture.parley(["cluster", "status", "--url", urls[1], "--json"])
          const shown = listed.code === 0 ? JSON.parse(listed.stdout) : undefined
          if (shown !== undefined && shown.runners.length === 2 && shown.shardsHeld > 0) break
          yield* Effect.sleep("300 millis")
        }
        assert.strictEqual(listed.code, 0, listed.stderr)
        const json = JSON.parse(listed.stdout)
        assert.deepStrictEqual(json.runners.map((runner: { address: string }) => runner.address), runners)
        assert.strictEqual(
          json.runners.reduce((sum: number, runner: { shards: number }) => sum + runner.shards, 0),
          json.shardsPerGroup
        )
        const table = yield* Fixture.parley(["cluster", "status", "--url", urls[0]])
        assert.strictEqual(table.code, 0, table.stderr)
        assert.match(table.stdout, /^RUNNER\s+HEALTHY\s+SHARDS/)
        for (const address of runners) {
          assert.match(table.stdout, new RegExp(`${address}( \\(asked\\))?\\s+yes\\s+\\d+`))
        }
        assert.include(table.stdout, `2 runners, ${json.shardsPerGroup} shards (default: ${json.shardsPerGroup} each)`)
        assert.match(table.stdout, /holds \d+ shards? and \d+ trees? in memory/)
        const refused = yield* Fixture.parley(["cluster", "status", "--url", urls[0], "--key", "not-the-key-012345"])
        assert.strictEqual(refused.code, 1)
        assert.include(refused.stderr, `the server at ${urls[0]} refused the API key (from --key)`)
      }),
    { timeout: 120_000 }
  )

  it.live(
    "parley cluster status of a server that is no runner: a one-line error (exit 1)",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(`${dir}/sessions.db`)
        const asked = yield* Fixture.parley(["cluster", "status", "--url", server.url])
        assert.strictEqual(asked.code, 1)
        assert.include(asked.stderr, `the server at ${server.url} is not a cluster runner (no /cluster/status)`)
      }),
    { timeout: 60_000 }
  )

  it.live(
    "--cluster needs host:port and a PostgreSQL database: refused before anything starts (exit 2)",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const noAddress = yield* Fixture.parley(["serve", "--cluster", "nowhere", "--database", pgUrl])
        assert.strictEqual(noAddress.code, 2)
        assert.include(
          noAddress.stderr,
          "--cluster nowhere: a cluster runner needs host:port and a PostgreSQL database"
        )
        const sqlite = yield* Fixture.parley(["serve", "--cluster", "127.0.0.1:34431"], { PARLEY_DATA_DIR: dir })
        assert.strictEqual(sqlite.code, 2)
        assert.include(sqlite.stderr, "hint: give --cluster 127.0.0.1:34431 and --database postgres://")
        // `Serve.layer` given the same settings by a program: a typed ConfigError, nothing started.
        const model = yield* ScriptedModel.fromFunction(() => ScriptedModel.text("ok"))
        const demo: Serve.Demo = {
          models: Effect.succeed(Models.single(model.languageModel)),
          agents: [Fixture.locator.spec]
        }
        const refused = yield* Effect.flip(Effect.scoped(Layer.build(Serve.layer({
          port: 0,
          host: "127.0.0.1",
          dataDir: dir,
          apiKeys: `${Fixture.key}:tester`,
          logFormat: "logfmt",
          cluster: "127.0.0.1:34431"
        }, demo))))
        assert.isTrue(
          refused instanceof Config.ConfigError && refused.cause._tag === "SchemaError",
          String(refused)
        )
        assert.include(String(refused), "a cluster runner needs host:port and a postgres:// database")
      }),
    { timeout: 120_000 }
  )
})
