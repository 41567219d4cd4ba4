/**
 * A session's transcript: each turn as the user's message, then what the agent did in order — its messages (the text
 * as it streams), tool calls as collapsible cards with their arguments and results, callbacks as action cards,
 * subagents as nested threads (the child's turns, indented, with their own cards) — and how the turn ended.
 */
import type { Session } from "@parley/react"
import type { ReactNode } from "react"
import { ActionCard } from "./ActionCard.js"
import * as Format from "./format.js"

const ToolCall = (props: { readonly item: Extract<Session.Item, { _tag: "ToolCall" }> }) => {
  const { item } = props
  const status = item.result === undefined ? "running" : item.result.isFailure ? "failed" : "done"
  return (
    <details className={`card tool ${status}`} data-tool={item.toolId}>
      <summary>
        <span className="kind">Tool</span> <code>{item.name}</code> <span className={`status ${status}`}>{status}</span>
      </summary>
      <h5>Arguments</h5>
      <pre>{Format.json(item.arguments) || "(none)"}</pre>
      {item.result !== undefined && (
        <>
          <h5>{item.result.isFailure ? "Error" : "Result"}</h5>
          <pre>{Format.json(item.result.value)}</pre>
        </>
      )}
      {Format.who(item.decidedBy) !== undefined && <p className="muted">Allowed by {Format.who(item.decidedBy)}</p>}
    </details>
  )
}

const ending = (turn: Session.Turn): ReactNode => {
  if (turn.final === undefined) return null
  switch (turn.final._tag) {
    case "Failed":
      return <p className="ending failed" role="status">The turn failed: {turn.final.error.message}</p>
    case "Cancelled":
      return <p className="ending cancelled" role="status">The turn was cancelled.</p>
    default:
      return null
  }
}

const Items = (props: { readonly turn: Session.Turn; readonly turns: ReadonlyArray<Session.Turn> }): ReactNode =>
  props.turn.items.map((item) => {
    switch (item._tag) {
      case "Message":
        return (
          <div key={item.messageId} className="message assistant" data-streaming={String(item.streaming)}>
            <p>{item.text}{item.streaming && <span className="cursor" aria-hidden="true">▍</span>}</p>
          </div>
        )
      case "ToolCall":
        return <ToolCall key={item.toolCallId} item={item} />
      case "Callback":
        return <ActionCard key={item.callback.id} item={item} />
      case "Subagent": {
        const child = props.turns.find((turn) => turn.turnId === item.childTurnId)
        return (
          <section
            key={item.childSessionId}
            className="subagent"
            aria-label={`Subagent ${item.agent}`}
            data-session={item.childSessionId}
          >
            <p className="kind">
              Subagent <strong>{item.agent}</strong> {item.ended ? "· done" : "· working…"}
            </p>
            <p className="task">{item.task}</p>
            {child !== undefined && <Items turn={child} turns={props.turns} />}
          </section>
        )
      }
    }
  })

const Turn = (props: { readonly turn: Session.Turn; readonly turns: ReadonlyArray<Session.Turn> }) => {
  const { turn } = props
  const working = turn.state === "queued" || turn.state === "running"
  const streaming = turn.items.some((item) => item._tag === "Message" && item.streaming)
  return (
    <li className="turn" data-state={turn.state} data-turn={turn.turnId}>
      <div className="message user">
        <p>{turn.input}</p>
      </div>
      <Items turn={turn} turns={props.turns} />
      {working && !streaming && <p className="thinking" role="status">Working…</p>}
      {turn.state === "blocked" && <p className="thinking" role="status">Waiting for your answer</p>}
      {ending(turn)}
    </li>
  )
}

export const Transcript = (props: { readonly sessionId: string; readonly turns: ReadonlyArray<Session.Turn> }) => {
  const own = props.turns.filter((turn) => turn.sessionId === props.sessionId)
  return own.length === 0
    ? <p className="muted empty">No messages yet. Write one below to start.</p>
    : (
      <ol className="transcript" aria-label="Transcript">
        {own.map((turn) => <Turn key={turn.turnId} turn={turn} turns={props.turns} />)}
      </ol>
    )
}
