/**
 * Words for what the protocol says: who answered, a session's state, a time, a value.
 */
import type { Principal } from "@parley/core/Principal"
import type { Directory } from "@parley/react"

/** Who gave an answer, in words: a label, a handler's name, a grant, a policy rule; `undefined` when nothing says. */
export const who = (principal: Principal | undefined): string | undefined => {
  if (principal === undefined) return undefined
  switch (principal._tag) {
    case "Client":
      return principal.label
    case "Handler":
      return `the handler ${principal.name}`
    case "Grant":
      return `a remembered answer (${principal.id})`
    case "Policy":
      return `the policy (${principal.rule})`
    case "ApiKey":
      return who(principal.onBehalfOf) ?? `a program with the key ${principal.keyId}`
    case "Link":
      return principal.person ?? "someone with an answer link"
    default:
      return undefined
  }
}

export const stateLabel: Record<Directory.SessionState, string> = {
  idle: "new",
  running: "running",
  waiting: "waiting for you",
  completed: "done",
  failed: "failed",
  cancelled: "cancelled"
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" })

/** "2 minutes ago", "yesterday", …: how long ago `date` was. */
export const ago = (date: Date, now = Date.now()): string => {
  const seconds = Math.round((date.getTime() - now) / 1000)
  if (Math.abs(seconds) < 45) return "just now"
  const minutes = Math.round(seconds / 60)
  if (Math.abs(minutes) < 60) return relative.format(minutes, "minute")
  const hours = Math.round(minutes / 60)
  if (Math.abs(hours) < 24) return relative.format(hours, "hour")
  return relative.format(Math.round(hours / 24), "day")
}

export const json = (value: unknown): string => {
  if (value === undefined) return ""
  try {
    return JSON.stringify(value, null, 2)
  } catch {
    return String(value)
  }
}
