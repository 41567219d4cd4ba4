/**
 * The SQL text of the write path, built once per dialect (and per row count for multi-row inserts) and run on the
 * transaction's connection as prepared statements: an append is a handful of statements, and the group commit runs
 * hundreds of appends per transaction, so they skip the `sql` template's per-call compilation and span.
 */
import type { EventRow } from "./codec.js"

export type Dialect = "sqlite" | "pg"

export interface Statements {
  /**
   * Compare-and-set of a tree's length, adding to its count of open turns, setting whether it is paused and numbering
   * the change. Params on SQLite: next_seq, open turns, paused, instance, tree, expected; on PostgreSQL: next_seq, open
   * turns, paused, instance, tree, expected, channel, payload. The fenced form (an append under a lease) takes the owner and epoch after `expected`.
   */
  readonly casNextSeq: string
  readonly casNextSeqFenced: string
  readonly insertEvents: (rows: number) => string
  readonly insertResolutions: (rows: number) => string
  readonly insertSessions: (rows: number) => string
  readonly insertCallbacks: (rows: number) => string
  /** Marks callbacks resolved (`parley_callbacks.resolved`, for the due-deadline index); params: their ids. */
  readonly markResolved: (rows: number) => string
  /** The webhook outbox's entries of an append (`parley_outbox`). */
  readonly insertOutbox: (rows: number) => string
  readonly insertTree: string
  readonly insertRootSession: string
}

const eventColumns = ["tree_id", "seq", "session_id", "turn_id", "tag", "version", "event"] as const
const resolutionColumns = ["callback_id", "tree_id", "seq", "resolution"] as const
const sessionColumns = ["session_id", "tree_id", "seq"] as const
const callbackColumns = ["callback_id", "tree_id", "session_id", "turn_id", "kind", "seq", "expires_at"] as const
const outboxColumns = ["tree_id", "seq", "kind"] as const
const treeColumns = ["tree_id", "version", "agent", "created_at", "next_seq"] as const

export const eventRow = (
  row: EventRow
): ReadonlyArray<unknown> => [row.tree_id, row.seq, row.session_id, row.turn_id, row.tag, row.version, row.event]

export const make = (dialect: Dialect): Statements => {
  /** Numbers `?` placeholders for PostgreSQL (`$1`, `$2`, …). */
  const text = (sql: string) => {
    if (dialect === "sqlite") return sql
    let i = 0
    return sql.replace(/\?/g, () => `$${++i}`)
  }
  const rowsOf = (table: string, columns: ReadonlyArray<string>, suffix: string) => {
    const cache = new Map<number, string>()
    return (rows: number) => {
      let sql = cache.get(rows)
      if (sql === undefined) {
        const row = `(${columns.map(() => "?").join(", ")})`
        sql = text(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${
            Array.from({ length: rows }, () => row).join(", ")
          }${suffix}`
        )
        if (cache.size < 64) cache.set(rows, sql)
      }
      return sql
    }
  }
  const cas = (fenced: boolean) => {
    const fence = fenced ? " AND owner = ? AND epoch = ?" : ""
    return dialect === "sqlite"
      ? text(
        "UPDATE parley_trees SET next_seq = ?, open_turns = open_turns + ?, paused = ?, " +
          "change_id = (SELECT COALESCE(MAX(change_id), 0) + 1 FROM parley_trees), " +
          `changed_by = ? WHERE tree_id = ? AND next_seq = ?${fence} RETURNING next_seq`
      )
      // The notification (its payload ends with the change's number) is sent at commit, and dropped with a savepoint
      // that rolls back.
      : text(
        "UPDATE parley_trees SET next_seq = ?, open_turns = open_turns + ?, paused = ?, " +
          "change_id = nextval('parley_change_seq'), changed_by = ? " +
          `WHERE tree_id = ? AND next_seq = ?${fence} ` +
          "RETURNING next_seq, pg_notify(?, ? || ' ' || change_id) AS notified"
      )
  }
  return {
    casNextSeq: cas(false),
    casNextSeqFenced: cas(true),
    insertEvents: rowsOf("parley_events", eventColumns, ""),
    insertResolutions: rowsOf(
      "parley_callback_resolutions",
      resolutionColumns,
      " ON CONFLICT (callback_id) DO NOTHING RETURNING callback_id"
    ),
    insertSessions: rowsOf(
      "parley_sessions",
      sessionColumns,
      " ON CONFLICT (session_id) DO NOTHING RETURNING session_id"
    ),
    insertCallbacks: rowsOf("parley_callbacks", callbackColumns, " ON CONFLICT (callback_id) DO NOTHING"),
    markResolved: (rows) =>
      text(`UPDATE parley_callbacks SET resolved = 1 WHERE callback_id IN (${Array(rows).fill("?").join(", ")})`),
    insertOutbox: rowsOf("parley_outbox", outboxColumns, " ON CONFLICT (tree_id, seq) DO NOTHING"),
    insertTree: rowsOf("parley_trees", treeColumns, " ON CONFLICT (tree_id) DO NOTHING")(1),
    insertRootSession: rowsOf("parley_sessions", sessionColumns, " ON CONFLICT (session_id) DO NOTHING")(1)
  }
}

/** Rows in chunks of `size` (500 by default): one multi-row statement a chunk, well under the drivers' limits. */
export const chunksOf = <A>(items: ReadonlyArray<A>, size = 500): Array<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size))
  return chunks
}
