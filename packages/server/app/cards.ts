/**
 * A callback as a card: an approval's Allow / Deny (with the tool's annotations and arguments), a client tool's
 * result as a form generated from its JSON Schema (invalid values refused here, the server's 422 shown), a sign-in's
 * Connect / Deny per source. The page removes a card when its `CallbackResolved` arrives.
 */
import type { Callback, OpenCallback } from "./dom.js"
import { $, button, subject, text } from "./dom.js"
import * as Form from "./form.js"

export interface Context {
  readonly request: (method: string, path: string, body?: unknown) => Promise<{ status: number; json: unknown }>
  /** The callbacks this page answered (kept in the tab's session storage). */
  readonly answeredHere: Set<string>
  readonly store: Storage
  /** The cards shown, by callback id. */
  readonly cards: Map<string, HTMLElement>
}

/** Shows a callback's card (once). */
export const make = ({ answeredHere, cards, request, store }: Context) => {
  const answer = async (callback: Callback, body: unknown, card: HTMLElement) => {
    const error = card.querySelector<HTMLElement>("[role=alert]")!
    // Marked before the request: the stream's CallbackResolved may come before the answer's 204 does.
    answeredHere.add(callback.id)
    const reply = await request(
      "POST",
      `/sessions/${callback.sessionId}/turns/${callback.turnId}/callbacks/${callback.id}/answer`,
      body
    ).catch((cause: unknown) => {
      answeredHere.delete(callback.id)
      throw cause
    })
    if (reply.status === 204) {
      store.setItem("parley.answered", JSON.stringify([...answeredHere]))
      return
    }
    answeredHere.delete(callback.id)
    const failure = reply.json as { reason?: string; description?: string; _tag?: string } | undefined
    error.textContent = `The server refused the answer (${reply.status}): ${
      failure?.reason ?? failure?.description ?? failure?._tag ?? ""
    }`
  }

  const showCard = async (callback: Callback) => {
    if (cards.has(callback.id)) return
    const card = document.createElement("article")
    card.className = "callback"
    card.dataset.callbackId = callback.id
    card.setAttribute("aria-label", `${callback.kind} ${subject(callback)}`)
    cards.set(callback.id, card)
    const alert = text("p", "", "")
    alert.setAttribute("role", "alert")
    if (callback.kind === "approval" && callback.request !== undefined) {
      card.append(text("h4", `May the agent call ${callback.request.tool.id}?`))
      const annotations = callback.request.tool.annotations ?? {}
      const badges = document.createElement("p")
      for (
        const [hint, label] of [
          ["readOnlyHint", "read-only"],
          ["destructiveHint", "destructive"],
          ["idempotentHint", "idempotent"],
          ["openWorldHint", "open world"]
        ] as const
      ) {
        if (annotations[hint] === true) badges.append(text("span", label, `badge ${label.replace(" ", "-")}`))
      }
      const reasonId = `reason-${callback.id}`
      const reason = document.createElement("input")
      reason.id = reasonId
      const reasonLabel = text("label", "Reason (if you deny)") as HTMLLabelElement
      reasonLabel.htmlFor = reasonId
      card.append(
        badges,
        text("pre", JSON.stringify(callback.request.arguments, null, 2)),
        button("Allow", "allow", () => void answer(callback, { _tag: "AllowApproval" }, card)),
        button(
          "Deny",
          "deny",
          () =>
            void answer(
              callback,
              { _tag: "DenyApproval", ...(reason.value === "" ? {} : { reason: reason.value }) },
              card
            )
        ),
        reasonLabel,
        reason
      )
    } else if (callback.kind === "client_tool" && callback.request !== undefined) {
      card.append(
        text("h4", `Run ${callback.request.tool.id} and give its result`),
        text("pre", JSON.stringify(callback.request.arguments, null, 2))
      )
      const reply = await request("GET", `/callbacks?sessionId=${callback.sessionId}`)
      const open = (reply.json as ReadonlyArray<OpenCallback> | undefined)?.find((entry) =>
        entry.callback.id === callback.id
      )
      const success = open?.answerSchema.anyOf?.[0]?.properties?.result
      const form = document.createElement("form")
      const field = Form.field(success ?? {}, "Result", true, success ?? {})
      const send = text("button", "Send result", "primary") as HTMLButtonElement
      send.type = "submit"
      form.append(field.element, send)
      form.addEventListener("submit", (event) => {
        event.preventDefault()
        const read = field.read()
        if (!read.ok) {
          alert.textContent = `Not sent: ${read.error}.`
          return
        }
        alert.textContent = ""
        void answer(callback, { _tag: "ClientToolResult", isFailure: false, result: read.value }, card)
      })
      card.append(form)
    } else if (callback.requests !== undefined) {
      card.append(text("h4", "Sign in?"))
      const decisions = new Map<string, "connected" | "denied">()
      for (const signIn of callback.requests) {
        const group = document.createElement("fieldset")
        group.append(text("legend", signIn.source))
        for (const [label, value] of [["Connect", "connected"], ["Deny", "denied"]] as const) {
          const id = `${callback.id}-${signIn.id}-${value}`
          const radio = document.createElement("input")
          radio.type = "radio"
          radio.name = `${callback.id}-${signIn.id}`
          radio.id = id
          radio.addEventListener("change", () => decisions.set(signIn.id, value))
          const radioLabel = text("label", label) as HTMLLabelElement
          radioLabel.htmlFor = id
          radioLabel.style.display = "inline"
          group.append(radio, radioLabel)
        }
        card.append(group)
      }
      card.append(button("Send", "primary", () => {
        const requests = callback.requests ?? []
        if (requests.some((signIn) => !decisions.has(signIn.id))) {
          alert.textContent = "Not sent: choose Connect or Deny for every source."
          return
        }
        const pick = (value: string) => requests.filter((signIn) => decisions.get(signIn.id) === value).map((r) => r.id)
        void answer(callback, { _tag: "SignInAnswer", connected: pick("connected"), denied: pick("denied") }, card)
      }))
    }
    card.append(alert)
    if (cards.get(callback.id) === card) $("open").append(card)
  }

  return showCard
}
