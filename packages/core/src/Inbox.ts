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
import type { CallbackId } from "./Ids.js"
import * as Ids from "./Ids.js"
import type { LimitExceeded, TransportFailure } from "./ParleyError.js"
import type { RuntimeMissing } from "./ParleyError.js"
import { CallbackNotOpen } from "./ParleyError.js"
import * as Principal from "./Principal.js"
import type { ListOpenFilter, OpenCallback } from "./Transport.js"
import type { AnswerError, Transport } from "./Transport.js"
import { transportFor } from "./Transport.js"
import type { Service as TransportService } from "./Transport.js"
import type { AnswerOptions } from "./Turn.js"

/**
 * The callbacks open right now, oldest first within a tree; optionally of one session or one kind.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const listOpen = (
  filter?: ListOpenFilter
): Effect.Effect<ReadonlyArray<OpenCallback>, TransportFailure | LimitExceeded | RuntimeMissing, Transport> =>
  Effect.flatMap(transportFor("Inbox", "listOpen"), (transport) => transport.listOpen(filter))

/**
 * Answers an open callback by its id: as `listOpen` gave it, a `Callback` from a turn's events, or the id alone — a
 * `CallbackId`, or a plain string (from a URL, a CLI argument, a queue message) that is checked first (`Ids.callbackId`:
 * a malformed id fails with `InvalidId` and sends nothing). Given the id alone, the callback is looked up among those
 * open (`listOpen`); one that is not open (never opened, or already resolved) fails with `CallbackNotOpen`. So a
 * program that retries an answer with its `requestId` (see `Turn.AnswerOptions`) passes the callback, not its id
 * alone: the retry of an answer that won then succeeds.
 *
 * @example
 * ```ts
 * import { Answer, Inbox } from "@parley/core"
 *
 * // e.g. from POST /callbacks/:id/approve
 * const approve = (id: string) => Inbox.answer(id, new Answer.AllowApproval())
 * ```
 *
 * @since 0.1.0
 * @category Accessors
 */
export const answer = (
  open: OpenCallback | Callback | CallbackId | string,
  answer: Answer,
  options?: AnswerOptions
): Effect.Effect<void, AnswerError | RuntimeMissing, Transport> =>
  Effect.gen(function*() {
    const transport = yield* transportFor("Inbox", "answer")
    const callback = typeof open !== "string"
      ? ("callback" in open ? open.callback : open)
      : yield* findOpen(transport, yield* Ids.callbackId(open))
    return yield* transport.answer({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      callbackId: callback.id,
      answer,
      answeredBy: new Principal.Client({
        ...(options?.label === undefined ? {} : { label: options.label }),
        ...(options?.roles === undefined ? {} : { roles: options.roles })
      }),
      requestId: options?.requestId
    })
  })

const findOpen = (transport: TransportService, callbackId: CallbackId) =>
  Effect.flatMap(transport.listOpen(), (open) => {
    const found = open.find((candidate) => candidate.callback.id === callbackId)
    return found === undefined
      ? Effect.fail(
        new CallbackNotOpen({
          module: "Inbox",
          method: "answer",
          callbackId,
          description: "no open callback has this id (never opened, or already resolved)"
        })
      )
      : Effect.succeed(found.callback)
  })
