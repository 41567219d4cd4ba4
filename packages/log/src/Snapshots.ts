/**
 * Snapshots of trees' projections: `save` keeps the latest snapshot of a tree (`SnapshotCodec.encode`, taken at a
 * `seq`), never an older one; `load` returns it, so a long tree is loaded from it and the events after it. A snapshot
 * is a cache of the log's fold, never the truth: a driver may drop it.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { SessionStore, Snapshots } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const latestSeq = (treeId: Ids.SessionId) => Effect.gen(function*() {
 *   const snapshots = yield* Snapshots.Snapshots
 *   const snapshot = yield* snapshots.load(treeId)
 *   return snapshot._tag === "Some" ? snapshot.value.seq : 0
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StoreError } from "./StoreError.js"

/**
 * A snapshot of a tree's projection, as a driver keeps it: the state after the events before `seq`, as JSON text
 * (`SnapshotCodec.encode`), and the layout it was written with (`SnapshotCodec.version`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Snapshot {
  /** The length of the log the state covers (its `nextSeq`): the events from `seq` on come after it. */
  readonly seq: number
  readonly version: number
  readonly state: string
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /**
   * Keeps `snapshot` as the tree's latest, unless the stored one has a higher `seq` (a snapshot never moves backwards;
   * one at the same `seq` replaces it). A snapshot of a tree the log does not have is not kept.
   */
  readonly save: (treeId: SessionId, snapshot: Snapshot) => Effect.Effect<void, StoreError>
  /** The tree's latest snapshot, if one was saved. */
  readonly load: (treeId: SessionId) => Effect.Effect<Option.Option<Snapshot>, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Snapshots extends Context.Service<Snapshots, Service>()("@parley/log/Snapshots") {}
