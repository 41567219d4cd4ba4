/** The brand every Parley error carries (re-exported by `ParleyError`). */
/**
 * @since 0.1.0
 * @category Models
 */
export const TypeId: unique symbol = Symbol.for("@parley/core/ParleyError")

/**
 * @since 0.1.0
 * @category Models
 */
export type TypeId = typeof TypeId
