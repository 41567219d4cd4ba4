/**
 * A callback inline in the transcript, as an action card: an approval's Allow / Deny with a reason, edited arguments
 * and "remember"; a client tool's result as a form generated from its schema; a sign-in's Connect / Deny per source.
 * Once resolved it says how, and who answered: "answered here" only when the winning answer carries the request id
 * this tab sent (`answeredHere`, from the `CallbackResolved` itself), never guessed from timing.
 */
import { Answer as CoreAnswer } from "@parley/core"
import type { Callback as CoreCallback } from "@parley/core"
import type { Session } from "@parley/react"
import { Answer, Connection } from "@parley/react"
import type { ReactNode } from "react"
import { useId, useState } from "react"
import { explain } from "./errors.js"
import * as Format from "./format.js"
import * as SchemaForm from "./SchemaForm.js"
import { useOpen } from "./waiting.js"

type CallbackItem = Extract<Session.Item, { _tag: "Callback" }>

/** Who answers from this app, as recorded on the `CallbackResolved`. */
const label = "session app"

const subject = (callback: CoreCallback.Callback) =>
  callback._tag === "OpenSignIn"
    ? callback.requests.map((request) => request.source).join(", ")
    : callback.request.tool.id

// =============================================================================
// Sending an answer
// =============================================================================

const useSend = (callback: CoreCallback.Callback) => {
  const { answer, error, pending } = Answer.useAnswer()
  const connection = Connection.useConnection()
  const [local, setLocal] = useState<string | undefined>(undefined)
  const send = async (given: CoreAnswer.Answer) => {
    // While the server is down an answer is not queued silently: the card says it was not sent.
    if (connection._tag === "Unreachable") {
      setLocal("The server is unreachable: nothing was sent. Try again once it is back.")
      return
    }
    setLocal(undefined)
    await answer(callback, given, { label })
  }
  const message = local ?? (error === undefined ? undefined : explain(error))
  return { send, pending, message, setLocal }
}

const Alert = (props: { readonly message: string | undefined }) => (
  <p role="alert" className="error">{props.message ?? ""}</p>
)

// =============================================================================
// The cards
// =============================================================================

const Approval = (props: { readonly callback: Extract<CoreCallback.Callback, { _tag: "OpenApproval" }> }) => {
  const { callback } = props
  const { message, pending, send, setLocal } = useSend(callback)
  const id = useId()
  const [reason, setReason] = useState("")
  const [editing, setEditing] = useState(false)
  const [edited, setEdited] = useState(() => Format.json(callback.request.arguments))
  const [remember, setRemember] = useState<"" | CoreAnswer.Remember>("")
  const annotations = callback.request.tool.annotations
  const badges = [
    annotations.readOnlyHint === true && "read-only",
    annotations.destructiveHint === true && "destructive",
    annotations.idempotentHint === true && "idempotent",
    annotations.openWorldHint === true && "open world"
  ].filter((badge): badge is string => badge !== false)
  const allow = () => {
    let args: unknown = undefined
    if (editing) {
      try {
        args = JSON.parse(edited) as unknown
      } catch {
        return setLocal("The edited arguments are not JSON: nothing was sent.")
      }
    }
    void send(
      new CoreAnswer.AllowApproval({
        ...(editing ? { arguments: args } : {}),
        ...(remember === "" ? {} : { remember })
      })
    )
  }
  const deny = () =>
    void send(
      new CoreAnswer.DenyApproval({
        ...(reason.trim() === "" ? {} : { reason: reason.trim() }),
        ...(remember === "" ? {} : { remember })
      })
    )
  return (
    <>
      <h4>
        May the agent run <code>{callback.request.tool.name}</code>?
      </h4>
      {badges.length > 0 && (
        <p className="badges">
          {badges.map((badge) => <span key={badge} className={`badge ${badge.replace(" ", "-")}`}>{badge}</span>)}
        </p>
      )}
      {editing
        ? (
          <div className="field">
            <label htmlFor={`${id}-args`}>Arguments (JSON)</label>
            <textarea
              id={`${id}-args`}
              rows={4}
              value={edited}
              onChange={(event) => setEdited(event.target.value)}
            />
          </div>
        )
        : <pre aria-label="Arguments">{Format.json(callback.request.arguments)}</pre>}
      <div className="row">
        <button type="button" className="link" onClick={() => setEditing(!editing)} aria-expanded={editing}>
          {editing ? "Keep the agent's arguments" : "Edit arguments"}
        </button>
      </div>
      <div className="decide">
        <div className="field">
          <label htmlFor={`${id}-remember`}>Remember</label>
          <select
            id={`${id}-remember`}
            value={remember}
            onChange={(event) => setRemember(event.target.value as "" | CoreAnswer.Remember)}
          >
            <option value="">Only this call</option>
            <option value="session">For this session</option>
            <option value="tree">For this session and its subagents</option>
          </select>
        </div>
        <button type="button" className="allow" disabled={pending} onClick={allow}>Allow</button>
      </div>
      <div className="decide">
        <div className="field grow">
          <label htmlFor={`${id}-reason`}>Reason (if you deny)</label>
          <input id={`${id}-reason`} value={reason} onChange={(event) => setReason(event.target.value)} />
        </div>
        <button type="button" className="deny" disabled={pending} onClick={deny}>Deny</button>
      </div>
      {pending && <p className="muted" aria-live="polite">Sending…</p>}
      <Alert message={message} />
    </>
  )
}

const ClientTool = (props: { readonly callback: Extract<CoreCallback.Callback, { _tag: "OpenClientToolCall" }> }) => {
  const { callback } = props
  const { message, pending, send, setLocal } = useSend(callback)
  const open = useOpen(callback.id)
  const [values, setValues] = useState<SchemaForm.Values>({})
  const schema = (open?.answerSchema as { readonly anyOf?: ReadonlyArray<SchemaForm.JsonSchema> } | undefined)
    ?.anyOf?.[0]?.properties?.result
  const submit = (event: { preventDefault: () => void }) => {
    event.preventDefault()
    const read = SchemaForm.read(schema ?? {}, values)
    if (!read.ok) return setLocal(`Not sent: ${read.error}.`)
    void send(CoreAnswer.ClientToolResult.success(read.value))
  }
  return (
    <>
      <h4>
        Run <code>{callback.request.tool.name}</code> and give its result
      </h4>
      {callback.request.arguments !== undefined && (
        <pre aria-label="Arguments">{Format.json(callback.request.arguments)}</pre>
      )}
      {schema === undefined
        ? <p className="muted">Reading the form…</p>
        : (
          <form onSubmit={submit}>
            <SchemaForm.Fields
              schema={schema}
              values={values}
              onChange={(path, value) => setValues((current) => ({ ...current, [path]: value }))}
            />
            <div className="row">
              <button type="submit" className="primary" disabled={pending}>Send result</button>
            </div>
          </form>
        )}
      <Alert message={message} />
    </>
  )
}

const SignIn = (props: { readonly callback: Extract<CoreCallback.Callback, { _tag: "OpenSignIn" }> }) => {
  const { callback } = props
  const { message, pending, send, setLocal } = useSend(callback)
  const [decisions, setDecisions] = useState<Readonly<Record<string, "connected" | "denied">>>({})
  const submit = () => {
    if (callback.requests.some((request) => decisions[request.id] === undefined)) {
      return setLocal("Not sent: choose Connect or Deny for every source.")
    }
    const pick = (value: string) => callback.requests.filter((r) => decisions[r.id] === value).map((r) => r.id)
    void send(new CoreAnswer.SignInAnswer({ connected: pick("connected"), denied: pick("denied") }))
  }
  return (
    <>
      <h4>Sign in to {subject(callback)}?</h4>
      {callback.requests.map((request) => (
        <fieldset key={request.id}>
          <legend>{request.source}</legend>
          {(["connected", "denied"] as const).map((value) => (
            <label key={value} className="inline">
              <input
                type="radio"
                name={`${callback.id}-${request.id}`}
                checked={decisions[request.id] === value}
                onChange={() => setDecisions((current) => ({ ...current, [request.id]: value }))}
              />{" "}
              {value === "connected" ? "Connect" : "Deny"}
            </label>
          ))}
        </fieldset>
      ))}
      <div className="row">
        <button type="button" className="primary" disabled={pending} onClick={submit}>Send</button>
      </div>
      <Alert message={message} />
    </>
  )
}

// =============================================================================
// Resolved
// =============================================================================

const outcome = (item: CallbackItem): string => {
  const answer = item.answer
  switch (answer?._tag) {
    case "AllowApproval":
      return answer.arguments === undefined ? "Allowed" : "Allowed with edited arguments"
    case "DenyApproval":
      return answer.reason === undefined ? "Denied" : `Denied: “${answer.reason}”`
    case "ClientToolResult":
      return answer.isFailure ? "Failed" : "Result sent"
    case "SignInAnswer":
      return answer.denied.length === 0 ? "Connected" : answer.connected.length === 0 ? "Sign-in denied" : "Answered"
    default:
      return "Answered"
  }
}

/** Where the answer came from, from the `CallbackResolved` alone. */
export const answeredWhere = (item: CallbackItem): string => {
  if (item.answeredHere) return "answered here"
  const by = Format.who(item.answeredBy)
  return by === undefined ? "answered elsewhere" : `answered elsewhere, by ${by}`
}

const Resolved = (props: { readonly item: CallbackItem }) => {
  const { item } = props
  const remember = item.answer !== undefined && "remember" in item.answer ? item.answer.remember : undefined
  const text = item.resolution === "answered"
    ? `${outcome(item)} · ${answeredWhere(item)}${remember === undefined ? "" : ` · remembered for the ${remember}`}`
    : item.resolution === "expired"
    ? "Expired before anyone answered"
    : item.resolution === "cancelled"
    ? "Cancelled"
    : "Closed: the turn ended"
  return <p className="resolution" data-where={item.answeredHere ? "here" : "elsewhere"}>{text}</p>
}

// =============================================================================
// The card
// =============================================================================

export const ActionCard = (props: { readonly item: CallbackItem }): ReactNode => {
  const { callback } = props.item
  const open = props.item.resolution === undefined
  const kind = callback.kind === "approval" ? "Approval" : callback.kind === "client_tool" ? "Client tool" : "Sign-in"
  return (
    <article
      className={`card action ${open ? "open" : "resolved"}`}
      aria-label={`${callback.kind} ${subject(callback)}`}
      data-callback-id={callback.id}
      data-resolution={props.item.resolution ?? "open"}
    >
      <p className="kind">{kind}</p>
      {!open
        ? (
          <>
            <h4>
              {callback._tag === "OpenSignIn"
                ? `Sign in to ${subject(callback)}`
                : <code>{callback.request.tool.name}</code>}
            </h4>
            <Resolved item={props.item} />
          </>
        )
        : callback._tag === "OpenApproval"
        ? <Approval callback={callback} />
        : callback._tag === "OpenClientToolCall"
        ? <ClientTool callback={callback} />
        : <SignIn callback={callback} />}
    </article>
  )
}
