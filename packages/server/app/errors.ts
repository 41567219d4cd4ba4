/**
 * The server's typed errors in the user's words, with what to do: never an internal function name.
 */
import type { Directory } from "@parley/react"

export const explain = (error: Directory.RequestError): string => {
  switch (error._tag) {
    case "AnswerMismatch":
      return `The server refused this answer: ${error.reason}. Nothing was sent to the agent; correct it and send again.`
    case "CallbackAlreadyAnswered":
      return "Someone else answered first: their answer stands."
    case "CallbackNotOpen":
      return "This question is no longer open (it expired or its session was cancelled)."
    case "TransportFailure":
      return "The server is unreachable: nothing was sent. Try again once it is back."
    case "LimitExceeded":
      return error.retryAfter === undefined
        ? `Over the server's limit (${error.limit}: ${error.max}).`
        : `Too many requests: try again in ${error.retryAfter} s.`
    case "SessionNotFound":
      return "There is no such session for this key."
    case "AgentInvalid":
    case "PolicyInvalid":
      return `The server refused this agent: ${error.description ?? error._tag}.`
    case "InvalidId":
      return "A malformed id: reload the page."
    default:
      return error.description ?? error._tag
  }
}
