/**
 * How the commands print: aligned tables, short JSON, durations, one line per event; coloured on a terminal (unless
 * `NO_COLOR`, or `TERM=dumb`), plain when piped (unless `FORCE_COLOR` forces colours): the rule of `effect/cli`'s
 * `TerminalCapabilities`, which the help follows.
 */
import type { Callback } from "@parley/core/Callback"
import * as Principal from "@parley/core/Principal"
import type { OpenCallback } from "@parley/core/Transport"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as DateTime from "effect/DateTime"

export const colours = (
  env: { readonly [name: string]: string | undefined } = process.env,
  isTTY = process.stdout.isTTY === true
): boolean => {
  if (env.TERM === "dumb") return false
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false
  const force = env.FORCE_COLOR?.toLowerCase()
  if (force !== undefined && force !== "" && force !== "0" && force !== "false") return true
  return isTTY
}

const paint = (code: string) => (text: string) => (colours() ? `\x1b[${code}m${text}\x1b[0m` : text)
export const dim = paint("2")
export const bold = paint("1")
export const green = paint("32")
export const red = paint("31")
export const yellow = paint("33")
export const cyan = paint("36")

/** Rows as columns padded to their widest cell (the last column unpadded). */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const all = [header, ...rows]
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)))
  return all.map((row) =>
    row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join("  ").trimEnd()
  ).join("\n")
}

/** JSON on one line, cut to `max` characters. */
export const shortJson = (value: unknown, max = 40): string => {
  const text = value === undefined ? "" : JSON.stringify(value)
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/** `42s`, `3m`, `2h`, `1d`. */
export const duration = (millis: number): string => {
  const seconds = Math.max(0, Math.round(millis / 1000))
  if (seconds < 60) return `${seconds}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`
  return `${Math.floor(seconds / 86400)}d`
}

/** What a callback is about: its tool id, or the sources of a sign-in. */
export const subject = (callback: Callback): string =>
  callback._tag === "OpenSignIn"
    ? callback.requests.map((request) => request.source).join(",")
    : callback.request.tool.id

const argumentsOf = (callback: Callback): unknown =>
  callback._tag === "OpenSignIn" ? undefined : callback.request.arguments

/** The table of `parley callbacks list`. */
export const callbackTable = (open: ReadonlyArray<OpenCallback>, now: number): string =>
  table(
    ["ID", "KIND", "TOOL", "ARGUMENTS", "SESSION", "AGE", "EXPIRES IN"],
    open.map(({ callback }) => [
      callback.id,
      callback.kind,
      subject(callback),
      shortJson(argumentsOf(callback)),
      callback.sessionId,
      duration(now - DateTime.toEpochMillis(callback.openedAt)),
      callback.expiresAt === undefined ? "-" : duration(DateTime.toEpochMillis(callback.expiresAt) - now)
    ])
  )

/**
 * One line per event (`MessageDelta`s are not lines: the caller joins them), indented by subagent depth.
 */
export const eventLine = (event: TurnEvent, depth = 0): string => {
  const head = `${dim(String(event.seq).padStart(4))} ${"  ".repeat(depth)}`
  const tag = (text: string, colour: (text: string) => string = cyan) => `${head}${colour(text)}`
  switch (event._tag) {
    case "TurnQueued":
      return `${tag("TurnQueued")} ${event.turnId} ${shortJson(event.input, 80)}`
    case "TurnStarted":
      return `${tag("TurnStarted")} ${event.turnId}`
    case "MessageCompleted":
      return `${tag("MessageCompleted")} ${event.text}`
    case "ToolCallStarted":
      return `${tag("ToolCallStarted")} ${event.toolId} ${shortJson(event.arguments, 80)}${
        event.decidedBy === undefined ? "" : ` (${Principal.describe(event.decidedBy)})`
      }`
    case "ToolCallCompleted":
      return `${tag("ToolCallCompleted", event.isFailure ? red : cyan)} ${event.toolCallId} ${
        shortJson(event.result, 80)
      }`
    case "CallbackOpened":
      return `${tag("CallbackOpened", yellow)} ${event.callback.id} ${event.callback.kind} ${subject(event.callback)} ${
        shortJson(argumentsOf(event.callback), 80)
      }`
    case "CallbackResolved":
      return `${tag("CallbackResolved", green)} ${event.callbackId} ${event.resolution}${
        event.answer === undefined ? "" : ` ${event.answer._tag}`
      }`
    case "SubagentStarted":
      return `${tag("SubagentStarted")} ${event.childSessionId} ${event.agent}`
    case "SubagentEnded":
      return `${tag("SubagentEnded")} ${event.childSessionId}`
    case "TurnBlocked":
      return `${tag("TurnBlocked", yellow)} on ${event.callbackIds.join(", ")}`
    case "TurnEnded":
      return `${tag("TurnEnded", event.state._tag === "Completed" ? green : red)} ${event.state._tag}${
        event.state._tag === "Completed" ? ` ${event.state.text}` : ""
      }`
    default:
      return tag(event._tag, dim)
  }
}
