/** The version of the event schemas and the upcasting path (re-exported by `TurnEvent`). */
import * as Result from "effect/Result"

/**
 * The version of the event schemas. Stores persist it with every event, so a later version can migrate old logs.
 *
 * @since 0.1.0
 * @category Models
 */
export const schemaVersion = 4

/**
 * The steps from each older version to the next, as functions of the encoded (JSON) event: `upcasts[n - 1]` turns
 * an event written at version `n` into its form at version `n + 1`.
 *
 * - 1 → 2: `CallbackResolved` gained `answeredBy`, `AllowApproval` gained `arguments` and `remember`, and the grant
 *   events are new: every addition is optional, so a version-1 event reads as it is. Its `answeredBy` stays absent
 *   (nobody recorded who answered), never invented.
 * - 2 → 3: `ToolCallStarted` gained `decidedBy` (the policy rule that allowed or denied the call without asking):
 *   optional, so a version-2 event reads as it is, without it (it was not recorded, and is not guessed from today's
 *   policy).
 * - 3 → 4: `CallbackResolved` gained `requestId` (the client's id of the answer that won): optional, so a version-3
 *   event reads as it is; a retry of an answer resolved before it was recorded is refused as already answered.
 */
const upcasts: ReadonlyArray<(encoded: unknown) => unknown> = [
  (encoded) => encoded,
  (encoded) => encoded,
  (encoded) => encoded
]

/**
 * An event's encoded form, written at `version`, brought to the current `schemaVersion` (then decode it with
 * `TurnEvent`). A version this code does not know — older than 1, or newer than it reads — is a failed `Result` saying so.
 *
 * @since 0.1.0
 * @category Utils
 */
export const upcast = (version: number, encoded: unknown): Result.Result<unknown, string> => {
  if (!Number.isSafeInteger(version) || version < 1) return Result.fail(`schema version ${version} is not a version`)
  if (version > schemaVersion) {
    return Result.fail(`schema version ${version} is newer than this code reads (${schemaVersion}): upgrade Parley`)
  }
  let current = encoded
  for (let from = version; from < schemaVersion; from++) current = upcasts[from - 1](current)
  return Result.succeed(current)
}
