/**
 * The store's reads, and what this process remembers to skip some of them (never the source of truth):
 * - session → tree, for sessions filed in `parley_sessions` (the mapping never changes once filed): `treeOf` and
 *   appends skip the database for them;
 * - the latest events of the trees this process appended to, so a new tail of an active tree starts without a read.
 *   An append by someone else to a tree drops its entry (its tails then read the table), and so does a tree's own
 *   pause (an append that ends with `TurnBlocked`): a paused tree leaves memory, the store's too.
 *
 * Every read runs to its end, even when its caller is interrupted (a wait that stopped, a handler whose callback
 * closed): on PostgreSQL, @effect/sql-pg cancels an interrupted query with `pg_cancel_backend(pid)`, which can land
 * after the query ended and its pooled connection went to another query — cancelling that one instead.
 */
import type { SessionId } from "@parley/core/Ids"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { StoredEventRow, TreeRow } from "./codec.js"
import { decodeEvent, decodeTree } from "./codec.js"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"

/** How many sessions the in-process session → tree memory holds (it is cleared when full). */
const sessionsLimit = 100_000
/** How many trees keep their latest events in memory, and how many events each. */
const recentTrees = 512
const recentEvents = 64

export type Reads = ReturnType<typeof make>

export const make = ({ sql }: Database) => {
  const sessionTrees = new Map<string, SessionId>()
  const recent = new Map<SessionId, Array<TurnEvent>>()

  const fileSession = (session: string, treeId: SessionId) => {
    if (sessionTrees.size >= sessionsLimit) sessionTrees.clear()
    sessionTrees.set(session, treeId)
  }

  /** The events this process appended to a tree at `expectedSeq`, after those it remembers of it. */
  const remember = (treeId: SessionId, expectedSeq: number, events: ReadonlyArray<TurnEvent>) => {
    const known = recent.get(treeId)
    recent.delete(treeId)
    if (events[events.length - 1]?._tag === "TurnBlocked") return
    const last = known?.[known.length - 1]
    const kept = known !== undefined && last !== undefined && last.seq + 1 === expectedSeq
      ? known.concat(events)
      : [...events]
    recent.set(treeId, kept.length > recentEvents ? kept.slice(kept.length - recentEvents) : kept)
    if (recent.size > recentTrees) recent.delete(recent.keys().next().value as SessionId)
  }

  const readEvents = (method: string, treeId: SessionId, from: number) =>
    Effect.uninterruptible(sql<StoredEventRow>`SELECT seq, version, event FROM parley_events
      WHERE tree_id = ${treeId} AND seq >= ${Math.max(0, from)} ORDER BY seq`).pipe(
      Effect.mapError(storeError(method, `could not read tree ${treeId}`)),
      Effect.flatMap((rows) => Effect.forEach(rows, (row) => Effect.fromResult(decodeEvent(method, treeId, row))))
    )

  const nextSeqOf = (method: string, treeId: SessionId) =>
    Effect.uninterruptible(
      sql<{ readonly next_seq: number | string }>`SELECT next_seq FROM parley_trees WHERE tree_id = ${treeId}`
    ).pipe(
      Effect.mapError(storeError(method, `could not read tree ${treeId}`)),
      Effect.map((rows) => rows.length === 0 ? Option.none() : Option.some(Number(rows[0].next_seq)))
    )

  const getTree = (treeId: SessionId) =>
    Effect.uninterruptible(
      sql<TreeRow>`SELECT tree_id, version, agent, created_at FROM parley_trees WHERE tree_id = ${treeId}`
    ).pipe(
      Effect.mapError(storeError("getTree", `could not read tree ${treeId}`)),
      Effect.flatMap((rows) =>
        rows.length === 0 ? Effect.succeedNone : Effect.map(Effect.fromResult(decodeTree(treeId, rows[0])), Option.some)
      )
    )

  const treeOf = (sessionId: SessionId) =>
    Effect.suspend(() => {
      const known = sessionTrees.get(sessionId)
      if (known !== undefined) return Effect.succeedSome(known)
      return Effect.uninterruptible(
        sql<{ readonly tree_id: string }>`SELECT tree_id FROM parley_sessions WHERE session_id = ${sessionId}`
      ).pipe(
        Effect.mapError(storeError("treeOf", `could not look up session ${sessionId}`)),
        Effect.map((rows) => {
          if (rows.length === 0) return Option.none()
          const treeId = rows[0].tree_id as SessionId
          fileSession(sessionId, treeId)
          return Option.some(treeId)
        })
      )
    })

  /** A tree's stored events from `from`: the latest ones of an active tree from memory, else from the table. */
  const readRecent = (treeId: SessionId, from: number) =>
    Effect.suspend(() => {
      const cached = recent.get(treeId)
      return cached !== undefined && cached[0].seq <= from
        ? Effect.succeed(cached.filter((event) => event.seq >= from))
        : readEvents("tail", treeId, from)
    })

  return {
    readEvents,
    nextSeqOf,
    getTree,
    treeOf,
    readRecent,
    remember,
    fileSession,
    /** Whether this process knows the session's tree. */
    isFiled: (session: string) => sessionTrees.has(session),
    /** Someone else appended to the tree: what this process remembers of its events is stale. */
    forget: (treeId: SessionId) => void recent.delete(treeId)
  }
}
