/**
 * What the SQL store keeps beside a tree's log: the latest snapshot of its projection (`Snapshots`) and its secrets
 * (`Secrets`), each one statement outside the appends' transactions.
 */
import type { SessionId } from "@parley/core/Ids"
import type * as Secrets from "@parley/log/Secrets"
import type * as Snapshots from "@parley/log/Snapshots"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Database } from "./database.js"
import { storeError } from "./errors.js"

export const snapshots = ({ awaitingLock, sql }: Database): Snapshots.Service => ({
  // One statement: kept only for a tree the store has, and only over a snapshot that is not further on.
  save: (treeId: SessionId, snapshot: Snapshots.Snapshot) =>
    awaitingLock(
      "saving a snapshot",
      sql`INSERT INTO parley_snapshots (tree_id, seq, version, state)
        SELECT ${treeId}, CAST(${snapshot.seq} AS INTEGER), CAST(${snapshot.version} AS INTEGER), ${snapshot.state}
        WHERE EXISTS (SELECT 1 FROM parley_trees WHERE tree_id = ${treeId})
        ON CONFLICT (tree_id) DO UPDATE SET seq = excluded.seq, version = excluded.version, state = excluded.state
        WHERE parley_snapshots.seq <= excluded.seq`
    ).pipe(
      Effect.asVoid,
      Effect.mapError(storeError("saveSnapshot", `could not save a snapshot of tree ${treeId}`))
    ),
  load: (treeId: SessionId) =>
    sql<{ readonly seq: number | string; readonly version: number | string; readonly state: string }>`
        SELECT seq, version, state FROM parley_snapshots WHERE tree_id = ${treeId}`.pipe(
      Effect.map((rows) =>
        rows.length === 0
          ? Option.none<Snapshots.Snapshot>()
          : Option.some({ seq: Number(rows[0].seq), version: Number(rows[0].version), state: rows[0].state })
      ),
      Effect.mapError(storeError("loadSnapshot", `could not read the snapshot of tree ${treeId}`))
    )
})

export const secrets = ({ sql }: Database): Secrets.Service => ({
  save: (treeId, name, value) =>
    sql`INSERT INTO parley_secrets (tree_id, name, value) VALUES (${treeId}, ${name}, ${value})
        ON CONFLICT (tree_id, name) DO UPDATE SET value = excluded.value`.pipe(
      Effect.asVoid,
      Effect.mapError(storeError("saveSecret", `could not save a secret of tree ${treeId}`))
    ),
  load: (treeId, name) =>
    sql<{ readonly value: string }>`SELECT value FROM parley_secrets WHERE tree_id = ${treeId} AND name = ${name}`
      .pipe(
        Effect.map((rows) => Option.fromNullishOr(rows[0]?.value)),
        Effect.mapError(storeError("loadSecret", `could not read a secret of tree ${treeId}`))
      ),
  delete: (treeId, name) =>
    sql`DELETE FROM parley_secrets WHERE tree_id = ${treeId} AND name = ${name}`.pipe(
      Effect.asVoid,
      Effect.mapError(storeError("deleteSecret", `could not delete a secret of tree ${treeId}`))
    )
})
