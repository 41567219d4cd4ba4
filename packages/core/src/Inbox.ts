/**
 * The callbacks open across sessions, for a program that answers them by id — a CLI, a web app, a worker — in this
 * process or another one over the same store. `Inbox.listOpen` lists them with the JSON Schema of the answer each
 * expects; `Inbox.answer` answers one (validated exactly as `Turn.answer` is). The turn that waits goes on wherever
 * it runs.
 *
 * @example
 * ```ts
 * import { Answer, Inbox } from "@parley/core"
 * import { Effect } from "effect"
 *
 * // Approve every tool call waiting for an approval, wherever its session runs.
 * const approveAll = Effect.gen(function*() {
 *   for (const open of yield* Inbox.listOpen({ kind: "approval" })) {
 *     yield* Inbox.answer(open, new Answer.AllowApproval({}))
 *   }
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { Answer } from "./Answer.js"
import type { Callback } from "./Callback.js"
import type {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "./ParleyError.js"
import type { ListOpenFilter, OpenCallback } from "./Transport.js"
import { Transport } from "./Transport.js"

/**
 * The callbacks open right now, oldest first within a tree; optionally of one session or one kind.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const listOpen = (
  filter?: ListOpenFilter
): Effect.Effect<ReadonlyArray<OpenCallback>, TransportFailure, Transport> =>
  Effect.flatMap(Transport, (transport) => transport.listOpen(filter))

/**
 * Answers an open callback (as `listOpen` gave it, or a `Callback` from a turn's events) by its id.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const answer = (
  open: OpenCallback | Callback,
  answer: Answer
): Effect.Effect<
  void,
  AnswerMismatch | CallbackNotOpen | CallbackAlreadyAnswered | SessionNotFound | TurnNotFound | TransportFailure,
  Transport
> => {
  const callback = "callback" in open ? open.callback : open
  return Effect.flatMap(Transport, (transport) =>
    transport.answer({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      callbackId: callback.id,
      answer
    }))
}
