/**
 * What a failure says, for the `description` of a `StoreError`: a `Cause`'s squashed error, a `StoreError`'s own
 * description, the driver's error under an `SqlError` (its `cause`), or the error's message.
 */
import { StoreError } from "@parley/runtime/SessionStore"
import * as Cause from "effect/Cause"

export const messageOf = (cause: unknown): string => {
  if (Cause.isCause(cause)) return messageOf(Cause.squash(cause))
  if (cause instanceof StoreError) return cause.description
  if (typeof cause === "object" && cause !== null && "cause" in cause && cause.cause instanceof Error) {
    return cause.cause.message
  }
  return cause instanceof Error ? cause.message : String(cause)
}
