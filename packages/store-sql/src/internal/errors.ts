/**
 * What a failure says, for the `description` of a `StoreError`, and the store's one way of making one.
 */
import { StoreError } from "@parley/log/StoreError"
import * as Cause from "effect/Cause"
import { isSqlError } from "effect/sql/SqlError"

/**
 * A `Cause`'s squashed error, a `StoreError`'s own description, what the database said under an `SqlError` (the
 * driver's error under its reason), the error under another error's `cause`, or the error's message.
 */
export const messageOf = (cause: unknown): string => {
  if (Cause.isCause(cause)) return messageOf(Cause.squash(cause))
  if (cause instanceof StoreError) return cause.description
  if (isSqlError(cause)) {
    const inner = cause.reason.cause
    return inner instanceof Error ? inner.message : cause.message
  }
  if (typeof cause === "object" && cause !== null && "cause" in cause && cause.cause instanceof Error) {
    return cause.cause.message
  }
  return cause instanceof Error ? cause.message : String(cause)
}

/** `method` failed: `description`, then what the cause says. */
export const storeError = (method: string, description: string) => (cause: unknown) =>
  new StoreError({ method, description: `${description}: ${messageOf(cause)}`, cause })
