/**
 * The example app of `@parley/react`: what waits for an answer across the key's sessions (the inbox: Allow or Deny an
 * approval, answer a client tool with JSON), the transcript of a session (`?session=ses_…`: its turns, the text as it
 * streams, tool calls with their results, who answered each callback), and a banner while the server is unreachable.
 * About a hundred lines of components on the hooks: no SSE, resume or answer logic of its own.
 */
import { Answer as CoreAnswer } from "@parley/core"
import type { Transport } from "@parley/core"
import { Answer, Connection, Inbox, Session } from "@parley/react"
import { useState } from "react"

const ConnectionBanner = () => {
  const connection = Connection.useConnection()
  if (connection._tag === "Unreachable") return <p role="alert">The server is unreachable: trying again…</p>
  if (connection._tag === "KeyRefused") return <p role="alert">The server refused this key.</p>
  return null
}

const OpenCallback = (props: { readonly open: Transport.OpenCallback }) => {
  const { answer, error, pending } = Answer.useAnswer()
  const [json, setJson] = useState("{}")
  const callback = props.open.callback
  const send = (given: CoreAnswer.Answer) => void answer(props.open, given, { label: "example app" })
  return (
    <li>
      <strong>{callback.kind}</strong> {callback._tag === "OpenSignIn"
        ? callback.requests.map((request) => request.source).join(", ")
        : `${callback.request.tool.id} ${JSON.stringify(callback.request.arguments)}`}{" "}
      {callback._tag === "OpenApproval" && (
        <>
          <button disabled={pending} onClick={() => send(new CoreAnswer.AllowApproval())}>Allow</button>
          <button disabled={pending} onClick={() => send(new CoreAnswer.DenyApproval({ reason: "not now" }))}>
            Deny
          </button>
        </>
      )}
      {callback._tag === "OpenClientToolCall" && (
        <>
          <input aria-label="Result (JSON)" value={json} onChange={(event) => setJson(event.target.value)} />
          <button disabled={pending} onClick={() => send(CoreAnswer.ClientToolResult.success(JSON.parse(json)))}>
            Send result
          </button>
        </>
      )}
      {callback._tag === "OpenSignIn" && (
        <button
          disabled={pending}
          onClick={() =>
            send(new CoreAnswer.SignInAnswer({ connected: [], denied: callback.requests.map((r) => r.id) }))}
        >
          Deny sign-in
        </button>
      )}
      {error !== undefined && <span role="alert">{error._tag}: {error.message}</span>}
    </li>
  )
}

const Waiting = () => {
  const { error, loading, open } = Inbox.useOpenCallbacks()
  return (
    <section aria-label="Waiting for an answer">
      <h2>Waiting for an answer ({open.length})</h2>
      {loading ?
        <p>Loading…</p> :
        open.length === 0 ?
        <p>Nothing waits.</p> :
        <ul>{open.map((entry) => <OpenCallback key={entry.callback.id} open={entry} />)}</ul>}
      {error !== undefined && <p role="alert">{error.message}</p>}
    </section>
  )
}

const Item = (props: { readonly item: Session.Item }) => {
  const item = props.item
  switch (item._tag) {
    case "Message":
      return <p className="assistant">{item.text}{item.streaming ? " …" : ""}</p>
    case "ToolCall":
      return (
        <details>
          <summary>
            {item.toolId} {item.result === undefined ? "(running)" : item.result.isFailure ? "(failed)" : ""}
          </summary>
          <pre>{JSON.stringify({ arguments: item.arguments, result: item.result?.value }, null, 2)}</pre>
        </details>
      )
    case "Callback":
      return (
        <p className="callback">
          {item.callback.kind}: {item.resolution === undefined
            ? "waiting"
            : item.resolution !== "answered"
            ? item.resolution
            : item.answeredHere
            ? "answered here"
            : "answered elsewhere"}
        </p>
      )
    case "Subagent":
      return <p className="subagent">{item.agent}: {item.task}{item.ended ? " (done)" : ""}</p>
  }
}

const Transcript = (props: { readonly sessionId: string }) => {
  const { error, turns } = Session.useTurns(props.sessionId)
  if (error !== undefined) {
    return <p role="alert">{error._tag === "SessionNotFound" ? "No such session." : error.message}</p>
  }
  return (
    <section aria-label="Transcript">
      <h2>Session {props.sessionId}</h2>
      {turns.filter((turn) => turn.sessionId === props.sessionId).map((turn) => (
        <article key={turn.turnId} data-state={turn.state}>
          <p className="user">{turn.input}</p>
          {turn.items.map((item, index) => <Item key={index} item={item} />)}
          {turn.state === "running" && <p>…</p>}
        </article>
      ))}
    </section>
  )
}

export const App = (props: { readonly sessionId: string | undefined }) => (
  <main>
    <ConnectionBanner />
    <Waiting />
    {props.sessionId !== undefined && <Transcript sessionId={props.sessionId} />}
  </main>
)
