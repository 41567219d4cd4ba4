/**
 * The schema of the SQL session store, as `@effect/sql` `Migrator` migrations. One schema for SQLite and PostgreSQL:
 * the few differences (SQLite's `WITHOUT ROWID`, 64-bit integers) are chosen with `sql.onDialectOrElse`.
 */
import * as Effect from "effect/Effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"

/** The migrations table of the store (apart from an application's own `effect_sql_migrations`). */
export const table = "parley_migrations"

const createTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const withoutRowId = sql.onDialectOrElse({
    sqlite: () => sql.literal("WITHOUT ROWID"),
    orElse: () => sql.literal("")
  })
  const bigint = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })

  // One row per tree: its header (the root agent), the length of its log (`next_seq`, the compare-and-set of every
  // append) and, for SQLite's change poll, a store-wide counter of the last append (`change_id`) and who made it.
  yield* sql`CREATE TABLE parley_trees (
    tree_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    agent TEXT NOT NULL,
    created_at TEXT NOT NULL,
    next_seq INTEGER NOT NULL,
    change_id ${bigint},
    changed_by TEXT
  )`
  yield* sql`CREATE INDEX parley_trees_change_id ON parley_trees (change_id)`

  // The log: one row per stored event, its JSON (`TurnEvent` encoded) and the schema version it was written with.
  yield* sql`CREATE TABLE parley_events (
    tree_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    version INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (tree_id, seq)
  ) ${withoutRowId}`

  // Every session seen in a tree (the root at `createTree`, subagents with their first event) to its tree.
  yield* sql`CREATE TABLE parley_sessions (
    session_id TEXT PRIMARY KEY,
    tree_id TEXT NOT NULL,
    seq INTEGER
  )`

  // Every callback opened, to its tree: an answer by callback id finds its tree without a scan.
  yield* sql`CREATE TABLE parley_callbacks (
    callback_id TEXT PRIMARY KEY,
    tree_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    seq INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX parley_callbacks_tree ON parley_callbacks (tree_id)`

  // At most one resolution per callback, by the primary key: the second `CallbackResolved` of a callback fails its
  // append (an `INSERT … ON CONFLICT DO NOTHING` that inserts nothing), never a read-then-write.
  yield* sql`CREATE TABLE parley_callback_resolutions (
    callback_id TEXT PRIMARY KEY,
    tree_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    resolution TEXT NOT NULL
  )`
})

const addLeases = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const bigint = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })

  // Turns queued and not ended (kept by every append): a tree with some is unfinished, and recovery takes it up.
  yield* sql`ALTER TABLE parley_trees ADD COLUMN open_turns INTEGER NOT NULL DEFAULT 0`
  yield* sql`UPDATE parley_trees SET open_turns =
    (SELECT COUNT(*) FROM parley_events e WHERE e.tree_id = parley_trees.tree_id AND e.tag = 'TurnQueued') -
    (SELECT COUNT(*) FROM parley_events e WHERE e.tree_id = parley_trees.tree_id AND e.tag = 'TurnEnded')`
  yield* sql`CREATE INDEX parley_trees_unfinished ON parley_trees (open_turns) WHERE open_turns > 0`

  // The lease of a tree: the engine that runs its work, and the epoch that fences its appends (raised by every change
  // of owner). An owner is alive while its heartbeat (`expires_at`, epoch millis) is in the future.
  yield* sql`ALTER TABLE parley_trees ADD COLUMN owner TEXT`
  yield* sql`ALTER TABLE parley_trees ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0`
  yield* sql`CREATE TABLE parley_owners (
    owner_id TEXT PRIMARY KEY,
    expires_at ${bigint} NOT NULL
  )`
})

const addSnapshots = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // The latest snapshot of each tree's projection: the state (JSON, `SnapshotCodec.encode`) after the events
  // before `seq`, and the layout `version` it was written with. A cache of the log's fold, never the truth.
  yield* sql`CREATE TABLE parley_snapshots (
    tree_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL
  )`
})

// PostgreSQL numbers its appends too (SQLite's CAS takes MAX + 1 under its single writer): the notification carries
// the number, and after a lost LISTEN connection the store reads the changes past the last number it saw.
const changeNumbers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE SEQUENCE parley_change_seq`,
    orElse: () => Effect.void
  })
})

const addSecrets = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Secrets of a tree (a connector's OAuth tokens and its sign-in in progress), by name: ciphertext only — the runtime's
  // `Credentials` encrypts them with PARLEY_SECRET_KEY before they get here. Never in the log.
  yield* sql`CREATE TABLE parley_secrets (
    tree_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (tree_id, name)
  )`
})

// Paused trees are claimed without being loaded: a tree knows whether its last append ended with `TurnBlocked`
// (`paused`), and each callback when it expires (`expires_at`, epoch millis; none for a callback without a deadline).
// Trees stored before are not paused until their next append: recovery loads them, as it did.
const pausedTrees = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const bigint = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
  yield* sql`ALTER TABLE parley_trees ADD COLUMN paused INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE parley_callbacks ADD COLUMN expires_at ${bigint}`
})

// The due deadlines: a cluster's wake-up pass asks every few seconds for the open callbacks whose deadline has passed
// (`listOpen({ expiresBy })`). Open is "no row in `parley_callback_resolutions`", which a partial index cannot say, so
// a callback says it too (`resolved`, set by the append that resolves it), and a partial index holds the open
// callbacks with a deadline by `expires_at`: the query reads the few due ones, not every callback ever opened. It
// still checks each against the resolutions (a process of an older version resolves without setting `resolved`: its
// callbacks only stay in the index).
const dueDeadlines = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE parley_callbacks ADD COLUMN resolved INTEGER NOT NULL DEFAULT 0`
  yield* sql`UPDATE parley_callbacks SET resolved = 1 WHERE EXISTS
    (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = parley_callbacks.callback_id)`
  yield* sql`CREATE INDEX parley_callbacks_due ON parley_callbacks (expires_at)
    WHERE resolved = 0 AND expires_at IS NOT NULL`
})

// The webhook outbox. An entry is one event the webhooks report (`callback.opened`, `callback.resolved`, `turn.ended`),
// written by the append that stores the event, in its transaction: `routed` once a deliverer gave it its deliveries.
// A delivery is an entry for one endpoint of a tenant: its attempts, the last status and error, when it is due next
// (epoch millis) and when it was delivered. Order per endpoint and tree is the deliverer's query: the earliest
// undelivered delivery of each (endpoint, tree) only.
const outbox = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const withoutRowId = sql.onDialectOrElse({
    sqlite: () => sql.literal("WITHOUT ROWID"),
    orElse: () => sql.literal("")
  })
  const bigint = sql.onDialectOrElse({ pg: () => sql.literal("BIGINT"), orElse: () => sql.literal("INTEGER") })
  yield* sql`CREATE TABLE parley_outbox (
    tree_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    routed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tree_id, seq)
  ) ${withoutRowId}`
  yield* sql`CREATE INDEX parley_outbox_unrouted ON parley_outbox (tree_id, seq) WHERE routed = 0`
  yield* sql`CREATE TABLE parley_deliveries (
    tree_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_status INTEGER,
    last_error TEXT,
    next_attempt_at ${bigint},
    delivered_at ${bigint},
    created_at ${bigint} NOT NULL,
    PRIMARY KEY (tree_id, seq, endpoint)
  ) ${withoutRowId}`
  yield* sql`CREATE INDEX parley_deliveries_pending ON parley_deliveries (endpoint, tree_id, seq)
    WHERE delivered_at IS NULL`
  yield* sql`CREATE INDEX parley_deliveries_tenant ON parley_deliveries (tenant, created_at)`
})

export const loader: Migrator.Loader = Migrator.fromRecord({
  "0001_create_tables": createTables,
  "0002_leases": addLeases,
  "0003_snapshots": addSnapshots,
  "0004_change_numbers": changeNumbers,
  "0005_secrets": addSecrets,
  "0006_paused_trees": pausedTrees,
  "0007_due_deadlines": dueDeadlines,
  "0008_outbox": outbox
})
