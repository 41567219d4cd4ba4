/**
 * A command's failure (`CliError`: one line, the hint that fixes it, the exit code) and `explain`, which turns any
 * error of a request into that line in the user's terms: the server's typed errors by what they mean to the person at
 * the terminal (the session, the callback, the grant, and the command that shows the right one), never by the
 * function of the server or client that raised them.
 */
import * as ParleyError from "@parley/core/ParleyError"
import * as Data from "effect/Data"
import * as HttpClientError from "effect/http/HttpClientError"

/** A command's failure: one line, the hint that fixes it, and the exit code (1 failure, 2 usage or validation). */
export class CliError extends Data.TaggedError("CliError")<{
  readonly message: string
  readonly hint?: string | undefined
  readonly exitCode: 1 | 2
}> {}

/** What `explain` needs to know of the connection: the server's URL, and where its key came from. */
export interface Target {
  readonly url: string
  readonly keySource: string
}

/** `Module.method: ` at the head of a Parley error's message: where it was raised, which a person has no use for. */
const where = /^[A-Z][A-Za-z]*\.[A-Za-z]+: /

/** A message without the place it was raised. */
export const plain = (message: string): string => message.replace(where, "")

const failure = (message: string, hint?: string) => new CliError({ message, hint, exitCode: 1 })
const invalid = (message: string, hint?: string) => new CliError({ message, hint, exitCode: 2 })

const refusedKey = (target: Target) =>
  failure(
    `the server at ${target.url} refused the API key (from ${target.keySource})`,
    "use the key the server printed at start (kept in its .parley/api-key), via --key or PARLEY_API_KEY"
  )

const unreachable = (target: Target) =>
  failure(
    `cannot reach a Parley server at ${target.url}`,
    "start one with `parley serve` (or `npm start`), or point --url / PARLEY_URL at yours"
  )

/** A Parley error as the person at the terminal reads it, with the command that shows what to do instead. */
const fromParleyError = (target: Target, error: ParleyError.ParleyError): CliError => {
  switch (error._tag) {
    case "SessionNotFound":
      return failure(
        `no session ${error.sessionId} for this key`,
        "`parley sessions list` shows the sessions of this key"
      )
    case "TurnNotFound":
      return failure(
        `session ${error.sessionId} has no turn ${error.turnId}`,
        `\`parley sessions show ${error.sessionId}\` lists its turns`
      )
    case "CallbackNotOpen":
      return failure(
        `callback ${error.callbackId} is not open: answered, expired or cancelled, or unknown to this key`,
        "`parley callbacks list` shows the open ones"
      )
    case "CallbackAlreadyAnswered":
      return failure(
        `callback ${error.callbackId} was already answered${
          error.answer === undefined ? "" : ` (${error.answer._tag})`
        }: yours was not used`,
        "`parley callbacks list` shows what still waits"
      )
    case "NotAllowedToAnswer":
      return failure(
        `${error.principal} may not answer callback ${error.callbackId}: nothing was sent, it is still open`,
        `it may be answered by ${
          [...error.approvers.roles.map((role) => `a key with role ${role}`), ...error.approvers.principals].join(
            ", or "
          )
        }`
      )
    case "GrantNotFound":
      return failure(
        `session ${error.sessionId} has no grant ${error.grantId} in force: revoked already, or never made`,
        `\`parley grants list --session ${error.sessionId}\` shows the grants in force`
      )
    case "AnswerMismatch":
      return invalid(`nothing was sent: ${error.reason}`)
    case "InvalidId":
      return invalid(
        `${JSON.stringify(error.value)} is not a ${idNames[error.kind]}${
          error.description === undefined ? "" : `: ${error.description}`
        }`
      )
    case "AgentInvalid":
      return invalid(`agent ${error.agent} is invalid: ${error.issues.join("; ")}`)
    case "PolicyInvalid":
      return invalid(`the permission policy is invalid: ${error.issues.join("; ")}`)
    case "TransportFailure": {
      const description = error.description ?? ""
      if (/Unauthorized|401|valid API key is required/.test(description)) return refusedKey(target)
      if (/fetch failed|ECONNREFUSED|Transport error|RequestError|connection closed/i.test(description)) {
        return unreachable(target)
      }
      return failure(`the request to ${target.url} failed${description === "" ? "" : `: ${description}`}`)
    }
    default:
      return failure(plain(error.message))
  }
}

const idNames = {
  sessionId: "session id (ses_…)",
  turnId: "turn id (turn_…)",
  callbackId: "callback id (cb_…)",
  toolId: "tool id",
  requestId: "request id (1 to 128 printable characters, no spaces)"
} as const

/**
 * Any error of a request, as the one line a person reads: an unreachable server names the URL and `parley serve`; a
 * refused key says where the key came from; the server's typed errors say what they mean, with the command that shows
 * the right session, callback or grant.
 */
export const explain = (target: Target) => (error: unknown): CliError => {
  if (error instanceof CliError) return error
  if (ParleyError.isParleyError(error)) return fromParleyError(target, error)
  const message = typeof error === "object" && error !== null && "message" in error ? String(error.message) : ""
  if (/Unauthorized|401|valid API key is required/.test(message)) return refusedKey(target)
  if (HttpClientError.isHttpClientError(error)) {
    if (error.response === undefined) return unreachable(target)
    if (error.response.status === 401) return refusedKey(target)
    return failure(`the server at ${target.url} answered ${error.response.status}`)
  }
  return failure(message === "" ? String(error) : plain(message))
}
