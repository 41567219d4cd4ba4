/**
 * One session: its agent and state, its transcript (live), the grants in force, and the message box (Enter sends,
 * Shift+Enter a new line; a send that fails keeps the text, and sent again it is still one turn).
 */
import { Directory, Session } from "@parley/react"
import * as Result from "effect/Result"
import { useEffect, useRef, useState } from "react"
import { explain } from "./errors.js"
import { Grants } from "./Grants.js"
import { Transcript } from "./Transcript.js"

const Composer = (props: { readonly sessionId: string; readonly busy: boolean }) => {
  const { error, pending, run } = Directory.useSendMessage()
  const [text, setText] = useState("")
  const box = useRef<HTMLTextAreaElement>(null)
  const send = async () => {
    const input = text.trim()
    if (input === "" || pending) return
    const result = await run(props.sessionId, input)
    if (Result.isSuccess(result)) {
      setText("")
      box.current?.focus()
    }
  }
  return (
    <form
      className="composer"
      onSubmit={(event) => {
        event.preventDefault()
        void send()
      }}
    >
      <label htmlFor="message-input" className="visually-hidden">Message</label>
      <textarea
        id="message-input"
        ref={box}
        rows={2}
        placeholder={props.busy ? "The agent is working; your message will wait for its turn" : "Write a message…"}
        value={text}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && !event.shiftKey) {
            event.preventDefault()
            void send()
          }
        }}
      />
      <button type="submit" className="primary" disabled={pending}>{pending ? "Sending…" : "Send"}</button>
      <p role="alert" className="error">{error === undefined ? "" : explain(error)}</p>
    </form>
  )
}

export const SessionView = (props: { readonly sessionId: string }) => {
  const session = Session.useSession(props.sessionId)
  const { error, status, turns } = Session.useTurns(props.sessionId)
  const end = useRef<HTMLDivElement>(null)
  const last = turns.at(-1)
  const count = turns.reduce((sum, turn) => sum + turn.items.length, turns.length)
  useEffect(() => {
    end.current?.scrollIntoView({ block: "end" })
  }, [count])
  if (session.error?._tag === "SessionNotFound" || error?._tag === "SessionNotFound") {
    return (
      <section className="session" aria-labelledby="session-title">
        <h2 id="session-title">No such session</h2>
        <p>
          There is no session <code>{props.sessionId}</code> for this key. <a href="#/">Start a new one</a>.
        </p>
      </section>
    )
  }
  const title = turns.find((turn) => turn.sessionId === props.sessionId)?.input
  return (
    <section className="session" aria-labelledby="session-title" data-session={props.sessionId}>
      <header className="session-header">
        <h2 id="session-title">{title ?? "New session"}</h2>
        <p className="muted">
          {session.info?.agent ?? "…"} · <code>{props.sessionId}</code>
          {status === "loading" && " · loading…"}
        </p>
      </header>
      <Grants sessionId={props.sessionId} />
      <Transcript sessionId={props.sessionId} turns={turns} />
      <div ref={end} />
      <Composer
        sessionId={props.sessionId}
        busy={last !== undefined && (last.state === "running" || last.state === "queued")}
      />
    </section>
  )
}
