/** The error of `run` given a callback that is not a call of its tool (re-exported by `ClientTool`). */
import type * as Callback from "@parley/core/Callback"
import * as Data from "effect/Data"

/**
 * `run` was given a callback that is not a call of its tool: an approval, a sign-in, or a call of another client
 * tool. Nothing ran. A program answering every callback by id catches it to leave the callback open for another
 * client (`Effect.catchTag("NotThisTool", () => Effect.void)`) or to try another tool.
 *
 * @since 0.1.0
 * @category Errors
 */
export class NotThisTool extends Data.TaggedError("NotThisTool")<{
  /** The id of the tool `run` was called on (`client.<name>`). */
  readonly toolId: string
  /** The callback it was given. */
  readonly callback: Callback.Callback
}> {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    const what = this.callback._tag === "OpenClientToolCall"
      ? `a call of ${this.callback.request.tool.id}`
      : this.callback.kind === "approval"
      ? "an approval"
      : "a sign-in"
    return `callback ${this.callback.id} is ${what}, not a call of ${this.toolId}`
  }
}
