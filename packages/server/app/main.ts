/**
 * The session app: talks to the server through ProtocolApi's routes (JSON) and the event stream (SSE read with
 * `fetch`, which can send the key; resumed by cursor with `Last-Event-ID`). The view of a session is rebuilt from its
 * log: each event is rendered once (by `seq`), deltas stream into their message until it completes.
 */
import * as Cards from "./cards.js"
import type { Callback, Event, OpenCallback } from "./dom.js"
import { $, button, subject, text } from "./dom.js"

/** What this tab remembers (its session, its answers); the key is the browser's: entered once, not per tab. */
const store = window.sessionStorage
const keys = window.localStorage

/**
 * The key of the link `npm start` prints (`/#key=…`): kept, then taken out of the address bar, so that it is neither
 * bookmarked nor shared with the URL. A fragment never reaches the server: no request, no log line carries it.
 */
const fromLink = () => {
  const given = new URLSearchParams(window.location.hash.slice(1)).get("key")
  if (given === null || given.trim() === "") return
  keys.setItem("parley.key", given.trim())
  window.history.replaceState(null, "", window.location.pathname + window.location.search)
}
fromLink()
let key = keys.getItem("parley.key") ?? ""
const answeredHere = new Set<string>(JSON.parse(store.getItem("parley.answered") ?? "[]") as Array<string>)

const request = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  if (response.status === 401) askKey("The server refused this key.")
  const text = await response.text()
  return { status: response.status, json: text === "" ? undefined : (JSON.parse(text) as unknown) }
}

const askKey = (error = "") => {
  $("key-section").hidden = false
  $("app").hidden = true
  $("key-error").textContent = error
  $<HTMLInputElement>("key-input").focus()
}

const short = (value: unknown) => (value === undefined ? "" : JSON.stringify(value))

// -----------------------------------------------------------------------------
// Sessions, agents, what waits
// -----------------------------------------------------------------------------

let agents: ReadonlyArray<{ readonly name: string }> = []

const showAgents = (list: typeof agents) => {
  agents = list
  const select = $<HTMLSelectElement>("agent-select")
  select.replaceChildren(...agents.map((agent, index) => new Option(agent.name, String(index))))
}

const loadSessions = async () => {
  const reply = await request("GET", "/sessions?limit=20")
  if (reply.status !== 200) return
  const page = reply.json as { sessions: ReadonlyArray<{ sessionId: string; agent: string; parentSessionId?: string }> }
  $("sessions").replaceChildren(
    ...page.sessions.filter((session) => session.parentSessionId === undefined).map(
      (session) => {
        const item = document.createElement("li")
        item.append(button(`${session.agent} · ${session.sessionId}`, "", () => void openSession(session.sessionId)))
        return item
      }
    )
  )
}

const loadWaiting = async () => {
  const reply = await request("GET", "/callbacks")
  if (reply.status !== 200) return
  const open = reply.json as ReadonlyArray<OpenCallback>
  $("waiting").replaceChildren(
    ...(open.length === 0 ? [text("li", "nothing waits for an answer")] : open.map(({ callback }) => {
      const item = document.createElement("li")
      item.append(
        button(
          `${callback.kind} ${subject(callback)} · ${callback.sessionId}`,
          "",
          () => void openSession(rootOf(callback))
        )
      )
      return item
    }))
  )
}

/** The session to open for a callback: its root, when the page saw the subagent start; else its own. */
const roots = new Map<string, string>()
const rootOf = (callback: Callback) => roots.get(callback.sessionId) ?? callback.sessionId

// -----------------------------------------------------------------------------
// One session: its events, its open callbacks
// -----------------------------------------------------------------------------

let current: { readonly sessionId: string; readonly abort: AbortController } | undefined
let lastSeq = -1
const depth = new Map<string, number>()
const streaming = new Map<string, HTMLElement>()
const completed = new Set<string>()
const cards = new Map<string, HTMLElement>()
const showCard = Cards.make({ request, answeredHere, store, cards })

const openSession = async (sessionId: string) => {
  current?.abort.abort()
  current = { sessionId, abort: new AbortController() }
  store.setItem("parley.session", sessionId)
  lastSeq = -1
  depth.clear()
  streaming.clear()
  completed.clear()
  cards.clear()
  $("events").replaceChildren()
  $("open").replaceChildren()
  $("resolutions").textContent = ""
  $("session-error").textContent = ""
  $("session").hidden = false
  $("session-title").textContent = `Session ${sessionId}`
  void follow(current)
}

/** Reads the session's event stream, and opens it again from the last event read when it drops. */
const follow = async (session: { readonly sessionId: string; readonly abort: AbortController }) => {
  while (!session.abort.signal.aborted) {
    try {
      const response = await fetch(`/sessions/${session.sessionId}/events`, {
        // The seq of the last event read: none before the first (a header of -1 is refused).
        headers: {
          authorization: `Bearer ${key}`,
          accept: "text/event-stream",
          ...(lastSeq < 0 ? {} : { "last-event-id": String(lastSeq) })
        },
        signal: session.abort.signal
      })
      if (response.status === 401) return askKey("The server refused this key.")
      if (response.status === 404) {
        $("session-error").textContent = "No such session for this key."
        return
      }
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += value
        const frames = buffer.split("\n\n")
        buffer = frames.pop() ?? ""
        for (const frame of frames) {
          const data = frame.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim())
          if (data.length > 0) handle(JSON.parse(data.join("\n")) as Event)
        }
      }
    } catch {
      if (session.abort.signal.aborted) return
    }
    await new Promise((resume) => setTimeout(resume, 500))
  }
}

const line = (event: Event, content: string, className = "") => {
  const item = text("li", content, className)
  item.dataset.seq = String(event.seq)
  item.dataset.tag = event._tag
  item.style.marginLeft = `${(depth.get(event.sessionId) ?? 0) * 1.5}rem`
  $("events").append(item)
  return item
}

const handle = (event: Event) => {
  if (current === undefined) return
  if (event._tag === "MessageDelta") {
    const messageId = String(event.messageId)
    if (completed.has(messageId)) return
    let element = streaming.get(messageId)
    if (element === undefined) {
      element = text("li", "", "assistant streaming")
      element.style.marginLeft = `${(depth.get(event.sessionId) ?? 0) * 1.5}rem`
      $("events").append(element)
      streaming.set(messageId, element)
    }
    element.textContent += String(event.delta)
    return
  }
  if (event.seq <= lastSeq) return
  lastSeq = event.seq
  render(event)
}

const render = (event: Event) => {
  switch (event._tag) {
    case "TurnQueued":
      return line(event, `${event.cause === undefined ? "You" : "Task"}: ${String(event.input)}`, "user")
    case "MessageCompleted": {
      const messageId = String(event.messageId)
      completed.add(messageId)
      streaming.get(messageId)?.remove()
      streaming.delete(messageId)
      if (String(event.text) !== "") line(event, String(event.text), "assistant")
      return
    }
    case "MessageAborted":
      streaming.get(String(event.messageId))?.remove()
      return line(event, "(the model step was interrupted)", "minor")
    case "ToolCallStarted":
      return line(event, `→ ${String(event.toolId)} ${short(event.arguments)}`)
    case "ToolCallCompleted":
      return line(
        event,
        `← ${String(event.toolId)} ${event.isFailure === true ? "failed: " : ""}${short(event.result)}`
      )
    case "SubagentStarted": {
      const child = String(event.childSessionId)
      depth.set(child, (depth.get(event.sessionId) ?? 0) + 1)
      roots.set(child, current?.sessionId ?? child)
      return line(event, `subagent ${String(event.agent)} started: ${String(event.task)}`)
    }
    case "SubagentEnded":
      return line(event, `subagent ${String(event.childSessionId)} ended`, "minor")
    case "CallbackOpened": {
      const callback = event.callback as Callback
      line(event, `asks: ${callback.kind} ${subject(callback)}`)
      void loadWaiting()
      return void showCard(callback)
    }
    case "CallbackResolved":
      return resolved(event)
    case "TurnEnded": {
      const state = event.state as { _tag: string; error?: { message?: string } }
      void loadWaiting()
      return line(
        event,
        `Turn ${state._tag.toLowerCase()}${state.error?.message ? `: ${state.error.message}` : ""}`,
        "final"
      )
    }
    default:
      return line(event, event._tag, "minor")
  }
}

const resolved = (event: Event) => {
  const id = String(event.callbackId)
  const card = cards.get(id)
  const focusHere = card !== undefined && card.contains(document.activeElement)
  card?.remove()
  cards.delete(id)
  const how = event.resolution === "answered"
    ? answeredHere.has(id) ? "answered here" : "answered elsewhere"
    : event.resolution === "expired"
    ? "expired"
    : event.resolution === "cancelled"
    ? "cancelled"
    : "closed: the turn ended"
  const answer = event.answer as { _tag?: string } | undefined
  line(event, `${id} ${how}${answer?._tag === undefined ? "" : ` (${answer._tag})`}`, "minor")
  $("resolutions").textContent = `${id} was ${how}.`
  if (focusHere) $<HTMLInputElement>("message-input").focus()
  void loadWaiting()
}

// -----------------------------------------------------------------------------
// Start
// -----------------------------------------------------------------------------

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault()
  key = $<HTMLInputElement>("key-input").value.trim()
  keys.setItem("parley.key", key)
  void start()
})

$("start-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  const agent = agents[Number($<HTMLSelectElement>("agent-select").value)]
  if (agent === undefined) return
  const reply = await request("POST", "/sessions", agent)
  if (reply.status !== 201) return
  await loadSessions()
  await openSession((reply.json as { sessionId: string }).sessionId)
  $<HTMLInputElement>("message-input").focus()
})

/**
 * The message being sent and its request id. A send whose answer is lost (the connection dropped, a gateway's
 * 502/503/504) is sent again with the same id, a few times, and so is the same text sent again by hand: the server
 * answers a repeated id with the turn it already queued, so a message is never queued twice.
 */
let sending: { readonly sessionId: string; readonly input: string; readonly requestId: string } | undefined

const sendMessage = async (sessionId: string, input: string) => {
  if (sending?.sessionId !== sessionId || sending.input !== input) {
    sending = { sessionId, input, requestId: crypto.randomUUID() }
  }
  const body = { input, requestId: sending.requestId }
  for (let attempt = 0;; attempt++) {
    const reply = await request("POST", `/sessions/${sessionId}/turns`, body).catch(() => undefined)
    if (reply !== undefined && ![502, 503, 504].includes(reply.status)) return reply
    if (attempt === 4) return reply
    await new Promise((resume) => setTimeout(resume, 100 * 2 ** attempt))
  }
}

$("message-form").addEventListener("submit", async (event) => {
  event.preventDefault()
  if (current === undefined) return
  const input = $<HTMLInputElement>("message-input")
  const reply = await sendMessage(current.sessionId, input.value)
  if (reply?.status === 202) {
    sending = undefined
    input.value = ""
    $("session-error").textContent = ""
  } else {
    $("session-error").textContent = reply === undefined
      ? "The connection dropped. Send again: the message will not be queued twice."
      : `The message was refused (${reply.status}).`
  }
})

const start = async () => {
  if (key === "") return askKey()
  const check = await request("GET", "/agents")
  if (check.status !== 200) return
  // The agents are in the page before it is shown: "Start session" is never offered with an empty list.
  showAgents(check.json as typeof agents)
  $("key-section").hidden = true
  $("app").hidden = false
  await Promise.all([loadSessions(), loadWaiting()])
  const last = store.getItem("parley.session")
  if (last !== null) await openSession(last)
  if (polling === undefined) polling = setInterval(() => void loadWaiting(), 3000)
}

let polling: ReturnType<typeof setInterval> | undefined

void start()
