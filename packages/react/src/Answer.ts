/**
 * Answering from a component: `useAnswer().answer(open, answer)` sends one of core's typed answers
 * (`AllowApproval`, `DenyApproval`, `ClientToolResult`, `SignInAnswer`) to an open callback and resolves with a
 * `Result`: success, or the server's typed error — `AnswerMismatch` (it does not fit: nothing was stored),
 * `CallbackAlreadyAnswered` (another answer won), `CallbackNotOpen` (it expired or was cancelled), `TransportFailure`
 * (the server could not be reached), `LimitExceeded` (over one of the server's limits) and the rest of `AnswerError`. It never rejects. Each answer carries a request id
 * of its own, recorded by the server on the winning answer's `CallbackResolved`: `Session.turnsOf` says
 * `answeredHere` of the answers that won with one sent from this client, whatever other tabs or programs did.
 *
 * @example
 * ```ts
 * import { Answer } from "@parley/core"
 * import type { Transport } from "@parley/core"
 * import { Answer as Answering } from "@parley/react"
 * import { createElement, Fragment } from "react"
 *
 * const AllowButton = (props: { readonly open: Transport.OpenCallback }) => {
 *   const { answer, error, pending } = Answering.useAnswer()
 *   return createElement(
 *     Fragment,
 *     null,
 *     createElement("button", {
 *       disabled: pending,
 *       onClick: () => void answer(props.open, new Answer.AllowApproval())
 *     }, "Allow"),
 *     error === undefined ? null : createElement("p", { role: "alert" }, error._tag)
 *   )
 * }
 * ```
 *
 * @since 0.1.0
 */
import type * as CoreAnswer from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import * as Principal from "@parley/core/Principal"
import type { AnswerError as TransportAnswerError, OpenCallback } from "@parley/core/Transport"
import { Transport } from "@parley/core/Transport"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { useCallback, useState } from "react"
import * as ParleyClient from "./ParleyClient.js"

/**
 * The typed errors an answer can meet: the server's, as `Transport.answer` gives them.
 *
 * @since 0.1.0
 * @category Models
 */
export type AnswerError = TransportAnswerError

/**
 * @since 0.1.0
 * @category Models
 */
export interface AnswerOptions {
  /** Who answers, recorded on the `CallbackResolved` (`answeredBy: Client { label }`): a user name, an address. */
  readonly label?: string | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Answering {
  /** Sends the answer; resolves with the outcome (never rejects). */
  readonly answer: (
    open: OpenCallback | Callback,
    answer: CoreAnswer.Answer,
    options?: AnswerOptions
  ) => Promise<Result.Result<void, AnswerError>>
  /** An answer of this hook is on its way. */
  readonly pending: boolean
  /** The last answer's error (cleared by the next answer). */
  readonly error: AnswerError | undefined
}

/** A request id for an answer: printable, no spaces, unique enough to tell this client's answers from others'. */
const requestId = () => `answer_${crypto.randomUUID()}`

/**
 * Sends an answer to a callback through the client's transport, recording its request id first (so that the
 * `CallbackResolved` that names it is known for this client's).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const send = (
  client: ParleyClient.ParleyClient,
  open: OpenCallback | Callback,
  answer: CoreAnswer.Answer,
  options?: AnswerOptions
): Effect.Effect<void, AnswerError, ParleyClient.Services> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const callback = "callback" in open ? open.callback : open
    const id = requestId()
    client.sentAnswers.set(callback.id, id)
    yield* transport.answer({
      sessionId: callback.sessionId,
      turnId: callback.turnId,
      callbackId: callback.id,
      answer,
      answeredBy: new Principal.Client({ label: options?.label }),
      requestId: id
    })
  }).pipe(Effect.ensuring(ParleyClient.inboxMayHaveChanged(client)))

/**
 * Answers callbacks, with the state of the last answer (pending, its typed error).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const useAnswer = (): Answering => {
  const client = ParleyClient.useClient()
  const [state, setState] = useState<{ readonly pending: number; readonly error: AnswerError | undefined }>({
    pending: 0,
    error: undefined
  })
  const answer = useCallback(
    async (open: OpenCallback | Callback, given: CoreAnswer.Answer, options?: AnswerOptions) => {
      setState((current) => ({ pending: current.pending + 1, error: undefined }))
      const result = await client.runtime.runPromise(Effect.result(send(client, open, given, options)))
      setState((current) => ({
        pending: current.pending - 1,
        error: Result.isFailure(result) ? result.failure : current.error
      }))
      return result
    },
    [client]
  )
  return { answer, pending: state.pending > 0, error: state.error }
}
