/**
 * Leases: one engine (an `owner`, alive while it renews `heartbeat`) runs a tree's work. `claim` makes the caller the
 * tree's owner when the tree has none, is its own, or its owner's heartbeat lapsed; every claim raises the tree's
 * `epoch` (the same owner's too: a process restarted under its name fences off the one before it). The `Lease` a claim
 * gives is the fence of the owner's appends (`EventLog.append`): a deposed owner's late append fails with `LeaseLost`.
 *
 * Recovery asks the leases too: `unfinished` lists the trees with work to resume, `claimPaused` claims in one go the
 * trees that wait on callbacks only, with their deadlines, without loading them.
 *
 * The leases live beside the log they fence (the same database), so a driver provides both: `SessionStore.layerMemory`
 * and `@parley/store-sql`'s layers provide `Leases` with `EventLog`.
 *
 * @example
 * ```ts
 * import type { Ids } from "@parley/core"
 * import { Leases, SessionStore } from "@parley/log"
 * import { Effect, Option } from "effect"
 *
 * const takeOver = (treeId: Ids.SessionId) => Effect.gen(function*() {
 *   const leases = yield* Leases.Leases
 *   yield* leases.heartbeat("engine-1", "30 seconds")
 *   const lease = yield* leases.claim(treeId, "engine-1")
 *   return Option.isSome(lease)
 * }).pipe(Effect.provide(SessionStore.layerMemory))
 * ```
 *
 * @since 0.1.0
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StoreError } from "./StoreError.js"

/**
 * The right to run a tree's work, as `claim` gave it: the fencing token of the owner's appends.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Lease {
  readonly owner: string
  readonly epoch: number
}

/**
 * A tree with turns not ended, and its owner when it has one.
 *
 * @since 0.1.0
 * @category Models
 */
export interface UnfinishedTree {
  readonly treeId: SessionId
  readonly owner: string | undefined
}

/**
 * The paused trees an owner claimed in one go (`claimPaused`), with the deadlines of their open callbacks.
 *
 * @since 0.1.0
 * @category Models
 */
export interface PausedClaim {
  readonly trees: ReadonlyArray<{ readonly treeId: SessionId; readonly lease: Lease }>
  /** When each open callback of those trees expires (epoch millis); callbacks without a deadline are left out. */
  readonly deadlines: ReadonlyArray<{
    readonly treeId: SessionId
    readonly callbackId: CallbackId
    readonly expiresAt: number
  }>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Keeps `owner` alive until `ttl` from now: its leases hold while it renews this. */
  readonly heartbeat: (owner: string, ttl: Duration.Input) => Effect.Effect<void, StoreError>
  /** Ends `owner`'s life at once (a clean shutdown): its trees can be claimed by others without waiting. */
  readonly retire: (owner: string) => Effect.Effect<void, StoreError>
  /**
   * Makes `owner` the tree's owner if the tree has none, is `owner`'s, or its owner's heartbeat lapsed, with a new
   * epoch (raised by every claim). The lease is `None` while another owner is alive (or when there is no such tree).
   *
   * With `unconditional: true` the claim takes the tree whoever holds it, alive or not (`None` only when there is no
   * such tree): the claim of an owner that something else placed on the tree (a cluster's shard holder). The epoch
   * rises all the same, so the owner before it can no longer append.
   */
  readonly claim: (
    treeId: SessionId,
    owner: string,
    options?: { readonly unconditional?: boolean | undefined }
  ) => Effect.Effect<Option.Option<Lease>, StoreError>
  /**
   * The trees with turns not ended that `owner` may claim (unowned, its own, or whose owner's heartbeat lapsed) and
   * that have work to resume: paused trees — whose last append ended with `TurnBlocked`, waiting on callbacks only —
   * are `claimPaused`'s.
   */
  readonly unfinished: (owner: string) => Effect.Effect<ReadonlyArray<UnfinishedTree>, StoreError>
  /**
   * Claims, in one go, the paused trees `owner` may claim (as `unfinished` says; those it owns already only when
   * `own`), each with a new epoch, and returns them with their open callbacks' deadlines: recovery claims paused trees
   * without loading them, and loads one when something happens to it (an answer, a deadline).
   */
  readonly claimPaused: (owner: string, own: boolean) => Effect.Effect<PausedClaim, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Leases extends Context.Service<Leases, Service>()("@parley/log/Leases") {}
