/**
 * The server's own table (`parley_server_sessions`, which tenant owns which session) is made by every server that
 * starts. Servers that start together on a new PostgreSQL database made it together: `CREATE TABLE IF NOT EXISTS` is
 * no lock there, and the loser failed to start ("the sessions table failed"). They now take turns.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { SessionInfo } from "@parley/core/Transport"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { layerSql, SessionTenants } from "../src/internal/sessions.js"
import { pgSchema } from "./fixtures/servers.js"

describe("the server's sessions table", () => {
  it.live("eight servers starting together on a new PostgreSQL schema all get it", () =>
    Effect.gen(function*() {
      const url = yield* Effect.orDie(pgSchema)
      const started = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        () =>
          Effect.result(
            Layer.build(Layer.provide(layerSql, PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
          ),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(started.map((result) => result._tag), Array(8).fill("Success"))
      // And it is one table: what one server registers, another finds.
      const [one, two] = started.flatMap((result) =>
        result._tag === "Success" ? [Context.get(result.success, SessionTenants)] : []
      )
      const sessionId = Ids.SessionId.make("ses_table")
      yield* one.register("acme", new SessionInfo({ sessionId, agent: "a", createdAt: DateTime.makeUnsafe(0) }))
      assert.deepStrictEqual(yield* two.tenantOf(sessionId), Option.some("acme"))
    }), { timeout: 30_000 })
})
