/**
 * A sign-in answer that carries credentials (`SignInGrant`: an authorization code, or tokens) is completed before it
 * is stored: each grant goes to its connector (`completeSignIn`: the code exchanged for tokens, kept encrypted for the
 * tree), and the answer that reaches `decide` — and the log — names the requests only. A grant its connector refuses
 * (a wrong or used code) refuses the whole answer with `AnswerMismatch`; nothing is stored, the callback stays open.
 */
import { type Answer, SignInAnswer, validateSync } from "@parley/core/Answer"
import type { CallbackId, SessionId } from "@parley/core/Ids"
import { AnswerMismatch, CallbackNotOpen } from "@parley/core/ParleyError"
import * as TreeState from "@parley/log/TreeState"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Connectors from "../Connectors.js"

export const make = (connectors: Connectors.Service) =>
(
  treeId: SessionId,
  state: TreeState.TreeState,
  callbackId: CallbackId,
  answer: Answer
): Effect.Effect<Answer, AnswerMismatch | CallbackNotOpen> => {
  if (answer._tag !== "SignInAnswer" || answer.connected.every((entry) => typeof entry === "string")) {
    return Effect.succeed(answer)
  }
  const record = TreeState.callback(state, callbackId)
  if (record === undefined) {
    // Not known here yet (the state may be behind the log): the caller catches up and asks again.
    return Effect.fail(
      new CallbackNotOpen({ module: "Turn", method: "answer", callbackId, description: "not known to this tree" })
    )
  }
  const stripped = new SignInAnswer({ connected: answer.connectedIds, denied: answer.denied })
  // Answers `decide` refuses anyway (another kind, closed, a request missing) are refused there, with no exchange.
  if (record.resolution !== undefined || Result.isFailure(validateSync(record.callback, answer))) {
    return Effect.succeed(stripped)
  }
  const callback = record.callback
  if (callback._tag !== "OpenSignIn") return Effect.succeed(stripped)
  const mismatch = (reason: string) => new AnswerMismatch({ module: "Turn", method: "answer", callbackId, reason })
  return Effect.forEach(answer.connected, (entry) => {
    if (typeof entry === "string") return Effect.void
    const request = callback.requests.find((candidate) => candidate.id === entry.id)
    const connector = request === undefined ? Option.none() : connectors.get(request.source)
    if (request === undefined || Option.isNone(connector) || connector.value.completeSignIn === undefined) {
      return Effect.fail(
        mismatch(`the sign-in to ${request?.source ?? entry.id} takes no credential: connect it by its id`)
      )
    }
    return Effect.mapError(
      connector.value.completeSignIn(treeId, entry),
      (reason) => mismatch(`the sign-in to ${request.source} could not be completed: ${reason}`)
    )
  }, { discard: true }).pipe(Effect.as(stripped))
}
