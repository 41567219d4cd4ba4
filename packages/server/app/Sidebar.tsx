/**
 * The side panel: a new session, what waits for an answer across the key's sessions (with counts, each opening its
 * session; approvals of one tool waiting in several places answered all at once), and the sessions with their title,
 * agent, time and state.
 */
import { Answer as CoreAnswer } from "@parley/core"
import type { Callback as CoreCallback, Transport } from "@parley/core"
import { Answer, type Directory } from "@parley/react"
import { useState } from "react"
import * as Format from "./format.js"
import * as Route from "./route.js"
import { useWaiting } from "./waiting.js"

const subject = (callback: CoreCallback.Callback) =>
  callback._tag === "OpenSignIn"
    ? `Sign in to ${callback.requests.map((request) => request.source).join(", ")}`
    : callback._tag === "OpenApproval"
    ? `Approve ${callback.request.tool.name}`
    : `Run ${callback.request.tool.name}`

/**
 * The approvals of one tool waiting at once, answered together: each as if one by one (its own request, so each
 * card says "answered here"); `onDone` says how many went through.
 */
const AllAtOnce = (props: {
  readonly tool: string
  readonly entries: ReadonlyArray<Transport.OpenCallback>
  readonly onDone: (text: string) => void
}) => {
  const { answer } = Answer.useAnswer()
  const [pending, setPending] = useState(false)
  const all = (allow: boolean) => async () => {
    setPending(true)
    let answered = 0
    for (const entry of props.entries) {
      const result = await answer(entry, allow ? new CoreAnswer.AllowApproval() : new CoreAnswer.DenyApproval({}))
      if (result._tag === "Success") answered++
    }
    setPending(false)
    props.onDone(`${allow ? "Allowed" : "Denied"} ${answered} of ${props.entries.length} approvals of ${props.tool}`)
  }
  const count = props.entries.length
  return (
    <div className="all-at-once" role="group" aria-label={`All ${count} approvals of ${props.tool}`}>
      <span>{count} × Approve {props.tool}</span>
      <span className="decide">
        <button type="button" className="allow" disabled={pending} onClick={all(true)}>Allow all {count}</button>
        <button type="button" className="deny" disabled={pending} onClick={all(false)}>Deny all {count}</button>
      </span>
    </div>
  )
}

export const Sidebar = (props: { readonly current: string | undefined; readonly sessions: Directory.Sessions }) => {
  const { open } = useWaiting()
  const { rootOf, sessions } = props.sessions
  const root = (sessionId: string) => rootOf.get(sessionId) ?? sessionId
  const waitingIn = new Map<string, number>()
  const approvalsOf = new Map<string, Array<Transport.OpenCallback>>()
  for (const entry of open) {
    const id = root(entry.callback.sessionId)
    waitingIn.set(id, (waitingIn.get(id) ?? 0) + 1)
    if (entry.callback._tag === "OpenApproval") {
      const tool = entry.callback.request.tool.name
      const ofTool = approvalsOf.get(tool)
      if (ofTool === undefined) approvalsOf.set(tool, [entry])
      else ofTool.push(entry)
    }
  }
  const groups = [...approvalsOf].filter(([, entries]) => entries.length > 1)
  const [batch, setBatch] = useState<string | undefined>(undefined)
  return (
    <nav className="sidebar" aria-label="Sessions">
      <a className="button primary new" href={Route.href({ _tag: "Home" })}>New session</a>
      <section aria-labelledby="inbox-title">
        <h2 id="inbox-title">
          Waiting for you <span className="count" aria-label={`${open.length} waiting`}>{open.length}</span>
        </h2>
        {groups.map(([tool, entries]) => <AllAtOnce key={tool} tool={tool} entries={entries} onDone={setBatch} />)}
        {batch === undefined ? null : <p className="muted" role="status">{batch}</p>}
        {open.length === 0
          ? <p className="muted">Nothing waits for an answer.</p>
          : (
            <ul className="inbox">
              {open.map((entry) => {
                const sessionId = root(entry.callback.sessionId)
                const title = sessions.find((s) => s.info.sessionId === sessionId)?.title
                return (
                  <li key={entry.callback.id} data-callback-id={entry.callback.id}>
                    <a href={Route.href({ _tag: "Session", sessionId })}>
                      <span>{subject(entry.callback)}</span>
                      <small className="muted">{title === undefined || title === "" ? sessionId : title}</small>
                    </a>
                  </li>
                )
              })}
            </ul>
          )}
      </section>
      <section aria-labelledby="sessions-title">
        <h2 id="sessions-title">Sessions</h2>
        {sessions.length === 0
          ? <p className="muted">{props.sessions.loading ? "Loading…" : "No sessions yet."}</p>
          : (
            <ul className="sessions">
              {sessions.map((entry) => {
                const id = entry.info.sessionId
                const waiting = waitingIn.get(id) ?? 0
                return (
                  <li key={id} data-session={id} data-state={entry.state}>
                    <a
                      href={Route.href({ _tag: "Session", sessionId: id })}
                      aria-current={props.current === id ? "page" : undefined}
                    >
                      <span className="title">{entry.title === "" ? "New session" : entry.title}</span>
                      <small className="meta">
                        {entry.info.agent} ·{" "}
                        <time dateTime={entry.lastActivity.toISOString()}>{Format.ago(entry.lastActivity)}</time>
                        {" · "}
                        <span className={`state ${entry.state}`}>
                          {waiting > 0 ? `${waiting} waiting` : Format.stateLabel[entry.state]}
                        </span>
                      </small>
                    </a>
                  </li>
                )
              })}
            </ul>
          )}
      </section>
    </nav>
  )
}
