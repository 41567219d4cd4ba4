/**
 * Leases in the SQL store: owners and their heartbeats (`parley_owners`), each tree's owner and epoch (on
 * `parley_trees`), what recovery takes up (`unfinished`) and the paused trees it claims without loading them
 * (`claimPaused`). Writes outside a transaction wait for another process's lock as transactions do.
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import type { Lease, Service } from "@parley/log/Leases"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"
import { chunksOf } from "./statements.js"

export const make = ({ awaitingLock, sql }: Database): Service => {
  /** Owned by nobody, by `owner` (when `own`), or by an owner whose heartbeat lapsed. */
  const claimable = (owner: string, own: boolean, now: number) =>
    own
      ? sql`(owner IS NULL OR owner = ${owner} OR NOT EXISTS (
          SELECT 1 FROM parley_owners o WHERE o.owner_id = parley_trees.owner AND o.expires_at > ${now}))`
      : sql`(owner IS NULL OR (owner <> ${owner} AND NOT EXISTS (
          SELECT 1 FROM parley_owners o WHERE o.owner_id = parley_trees.owner AND o.expires_at > ${now})))`

  /** The open callbacks of these trees that have a deadline. */
  const deadlinesOf = (treeIds: ReadonlyArray<SessionId>) =>
    Effect.map(
      Effect.forEach(chunksOf(treeIds), (chunk) =>
        sql<{
          readonly tree_id: string
          readonly callback_id: string
          readonly expires_at: number | string
        }>`SELECT c.tree_id, c.callback_id, c.expires_at FROM parley_callbacks c
          WHERE c.tree_id IN ${sql.in(chunk)} AND c.expires_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM parley_callback_resolutions r WHERE r.callback_id = c.callback_id)`),
      (chunks) =>
        chunks.flat().map((row) => ({
          treeId: row.tree_id as SessionId,
          callbackId: row.callback_id as CallbackId,
          expiresAt: Number(row.expires_at)
        }))
    )

  return {
    heartbeat: (owner, ttl) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        awaitingLock(
          "a heartbeat",
          sql`INSERT INTO parley_owners (owner_id, expires_at)
          VALUES (${owner}, ${now + Duration.toMillis(ttl)})
          ON CONFLICT (owner_id) DO UPDATE SET expires_at = excluded.expires_at`
        ).pipe(
          Effect.asVoid,
          Effect.mapError(storeError("heartbeat", `could not renew ${owner}`))
        )),
    retire: (owner) =>
      awaitingLock("retiring an owner", sql`DELETE FROM parley_owners WHERE owner_id = ${owner}`).pipe(
        Effect.asVoid,
        Effect.mapError(storeError("retire", `could not retire ${owner}`))
      ),
    claim: (treeId, owner, options) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        awaitingLock(
          "a claim",
          sql<{ readonly epoch: number | string }>`UPDATE parley_trees SET epoch = epoch + 1, owner = ${owner}
          WHERE tree_id = ${treeId} AND ${
            options?.unconditional === true ? sql`1 = 1` : claimable(owner, true, now)
          } RETURNING epoch`
        ).pipe(
          Effect.map((rows) =>
            rows.length === 0 ? Option.none() : Option.some<Lease>({ owner, epoch: Number(rows[0].epoch) })
          ),
          Effect.mapError(storeError("claim", `could not claim tree ${treeId}`))
        )),
    unfinished: (owner) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          sql<{ readonly tree_id: string; readonly owner: string | null }>`SELECT tree_id, owner FROM parley_trees
          WHERE open_turns > 0 AND paused = 0 AND ${claimable(owner, true, now)}
          ORDER BY created_at, tree_id`.pipe(
            Effect.map((rows) =>
              rows.map((row) => ({ treeId: row.tree_id as SessionId, owner: row.owner ?? undefined }))
            ),
            Effect.mapError(storeError("unfinished", "could not list the unfinished trees"))
          )
      ),
    claimPaused: (owner, own) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* awaitingLock(
          "claiming paused trees",
          sql<{ readonly tree_id: string; readonly epoch: number | string }>`UPDATE parley_trees
            SET epoch = epoch + 1, owner = ${owner}
            WHERE open_turns > 0 AND paused = 1 AND ${claimable(owner, own, now)}
            RETURNING tree_id, epoch`
        )
        const trees = claimed.map((row) => ({
          treeId: row.tree_id as SessionId,
          lease: { owner, epoch: Number(row.epoch) }
        }))
        const deadlines = yield* deadlinesOf(trees.map((tree) => tree.treeId))
        return { trees, deadlines }
      }).pipe(Effect.mapError(storeError("claimPaused", `could not claim the paused trees for ${owner}`)))
  }
}
