import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { AgentSpec, Ids, TurnEvent } from "@parley/core"
import { SqlStore } from "@parley/store-sql"
import { Context, DateTime, Effect, Layer, Queue, Redacted } from "effect"
import { pgSchema, storeOf } from "../databases.js"
import { applicationNameOf } from "../fixtures/child.js"
import { expect, spawn } from "./children.js"

// A process stopped inside a write transaction (SIGSTOP, a frozen VM) holds what it locked until it continues. On
// PostgreSQL that is a tree's row: without a bound, every other writer of the tree — a new owner taking it over, an
// answer from another process — would wait for as long as the process stays stopped. The store bounds it: the server
// ends a transaction left idle for `busyTimeout` (`idle_in_transaction_session_timeout`), and a write waits for a row
// `busyTimeout` at most (`lock_timeout`). (On SQLite the lock is the file's, which no one can take from a stopped
// process: SqlStore.test.ts shows the writes failing with a typed error and going through after SIGCONT.)

type Message =
  | { readonly _tag: "Appending" }
  | { readonly _tag: "Refused"; readonly message: string }

const treeId = Ids.SessionId.make("ses_stalled")
const queued = (seq: number) =>
  new TurnEvent.TurnQueued({
    sessionId: treeId,
    turnId: Ids.TurnId.make(`turn_test_${seq}`),
    seq,
    at: DateTime.makeUnsafe(0),
    input: "from the test"
  })

describe("Stalled: a writer stopped inside a transaction", () => {
  it.live(
    "on PostgreSQL, it holds its tree busyTimeout at most: another process's append goes through, the stopped " +
      "writer's transaction is ended and it goes on after SIGCONT",
    () =>
      Effect.gen(function*() {
        const url = yield* pgSchema
        const store = yield* storeOf(SqlStore.layerPg({ url, maxConnections: 2, busyTimeout: "3 seconds" }))
        yield* store.eventLog.createTree({
          treeId,
          agent: AgentSpec.make({ name: "a" }),
          createdAt: DateTime.makeUnsafe(0)
        })
        const writer = yield* spawn<Message>("writer", "appendLoopProcess.ts", {
          url,
          treeId,
          busyTimeoutMillis: 1_000
        })
        yield* expect(writer, "Appending", { timeout: "30 seconds" })

        // Stop the writer at a moment its transaction is open (its backend idle in a transaction).
        const sql = Context.get(
          yield* Layer.build(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
          PgClient.PgClient
        )
        const inTransaction = Effect.map(
          sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = ${applicationNameOf(writer.pid)} AND state LIKE 'idle in transaction%'`,
          (rows) => rows[0].n > 0
        )
        let stopped = false
        for (let attempt = 0; attempt < 500 && !stopped; attempt++) {
          yield* writer.signal("SIGSTOP")
          yield* Effect.sleep("5 millis")
          stopped = yield* inTransaction
          if (!stopped) yield* writer.signal("SIGCONT")
        }
        assert.isTrue(stopped, "the writer was stopped inside a transaction")

        // This process appends to the same tree: it waits for the row until the server ends the stalled transaction
        // (1 s idle, the writer's busyTimeout), well before this store's own 3 s.
        const started = Date.now()
        const next = (yield* store.eventLog.read(treeId, 0)).length
        yield* store.eventLog.append(treeId, next, [queued(next)])
        const waited = Date.now() - started
        assert.isBelow(waited, 2_900, "the append went through before its own lock_timeout")
        // Whatever it had locked when it stopped (maybe nothing yet), the server ends its transaction after 1 s idle.
        const deadline = Date.now() + 5_000
        while (yield* inTransaction) {
          if (Date.now() > deadline) assert.fail("the stopped writer's transaction is still open after 5 s")
          yield* Effect.sleep("50 millis")
        }
        assert.isBelow(Date.now() - started, 4_000)
        const stored = yield* store.eventLog.read(treeId, 0)
        const mine = stored[next]
        assert.strictEqual(mine?._tag === "TurnQueued" ? mine.input : undefined, "from the test")
        assert.deepStrictEqual(stored.map((event) => event.seq), stored.map((_, i) => i))

        // Resumed, the writer finds its transaction gone: that append fails typed, and it goes on after it.
        yield* Queue.clear(writer.messages)
        yield* writer.signal("SIGCONT")
        const refused = yield* expect(writer, "Refused", { timeout: "30 seconds" })
        assert.include(refused.message, "SessionStore.append")
        const before = (yield* store.eventLog.read(treeId, 0)).length
        yield* Effect.sleep("300 millis")
        assert.isAbove((yield* store.eventLog.read(treeId, 0)).length, before, "the writer appends again")
      }),
    { timeout: 60_000 }
  )
})
