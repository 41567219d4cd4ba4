/**
 * The errors of the session store, one family as `ParleyError` is one: every failure a `SessionStore` method (or a
 * store's constructor) fails with is one of these, each a `Schema.TaggedError` carrying the family's `TypeId`.
 *
 * - `StoreError`: the storage itself failed (I/O, a broken connection, a row that does not decode).
 * - `SeqConflict`: an append lost a race (the log had moved on): re-read, decide again.
 * - `ResolutionConflict`: a second resolution of one callback (exactly one `CallbackResolved` is stored per id).
 * - `LeaseLost`: an append made under a lease that another owner took over (a fencing token): nothing was written.
 *
 * `StoreFailure` is both the union type and the schema that decodes any of them; `isStoreError` tells a value of the
 * family from any other (by its `TypeId`, so it holds across copies of the package).
 *
 * @example
 * ```ts
 * import { StoreError } from "@parley/log"
 * import { Effect } from "effect"
 *
 * const program = Effect.fail(new StoreError.SeqConflict({ treeId: "ses_1", expected: 3, actual: 4 })).pipe(
 *   Effect.catchIf(StoreError.isStoreError, (error) => Effect.log(error.message))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = Symbol.for("@parley/log/StoreError")

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId

/**
 * An append lost a race: the log had moved on. Re-read, decide again.
 *
 * @since 0.1.0
 * @category Errors
 */
export class SeqConflict extends Schema.TaggedError<SeqConflict>("@parley/log/StoreError/SeqConflict")(
  "SeqConflict",
  { treeId: Schema.String, expected: Schema.Number, actual: Schema.Number }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `append to tree ${this.treeId} expected seq ${this.expected}, the log is at ${this.actual}`
  }
}

/**
 * A second resolution of one callback: exactly one `CallbackResolved` is stored per callback id.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ResolutionConflict
  extends Schema.TaggedError<ResolutionConflict>("@parley/log/StoreError/ResolutionConflict")(
    "ResolutionConflict",
    { treeId: Schema.String, callbackId: Schema.String }
  )
{
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `callback ${this.callbackId} of tree ${this.treeId} is already resolved`
  }
}

/**
 * An append made under a lease that is no longer the tree's: another owner claimed the tree (this one's heartbeat
 * lapsed). The append wrote nothing; the deposed owner must stop running the tree's work.
 *
 * @since 0.1.0
 * @category Errors
 */
export class LeaseLost extends Schema.TaggedError<LeaseLost>("@parley/log/StoreError/LeaseLost")(
  "LeaseLost",
  { treeId: Schema.String, owner: Schema.String, epoch: Schema.Number }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.owner} no longer holds tree ${this.treeId} (its lease at epoch ${this.epoch} was taken over)`
  }
}

/**
 * The storage failed (I/O, a broken connection, a row that does not decode).
 *
 * @since 0.1.0
 * @category Errors
 */
export class StoreError extends Schema.TaggedError<StoreError>("@parley/log/StoreError/StoreError")(
  "StoreError",
  {
    /** The public module whose method failed: `SessionStore` (a method of the port) unless a store's own
     * constructor failed (`SqlStore` for `SqlStore.layerSqlite`). */
    module: Schema.optional(Schema.String),
    method: Schema.String,
    description: Schema.String,
    cause: Schema.optional(Schema.Defect())
  }
) {
  /**
   * @since 0.1.0
   */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.module ?? "SessionStore"}.${this.method}: ${this.description}`
  }
}

/**
 * Any failure of the store: what `SessionStore.append` may fail with (the others fail with `StoreError` only).
 *
 * @since 0.1.0
 * @category Models
 */
export type StoreFailure = StoreError | SeqConflict | ResolutionConflict | LeaseLost

/**
 * @since 0.1.0
 * @category Schemas
 */
export const StoreFailure: Schema.Union<
  readonly [
    typeof StoreError,
    typeof SeqConflict,
    typeof ResolutionConflict,
    typeof LeaseLost
  ]
> = Schema.Union([StoreError, SeqConflict, ResolutionConflict, LeaseLost])

/**
 * Whether a value is an error of the store's family (any `StoreFailure`, not only the `StoreError` member).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isStoreError = (u: unknown): u is StoreFailure => Predicate.hasProperty(u, TypeId)
