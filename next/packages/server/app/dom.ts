/**
 * What the app's modules share: the shapes of what the server sends (as JSON), and small DOM helpers.
 */
import type * as Form from "./form.js"

export interface Callback {
  readonly _tag: "OpenApproval" | "OpenClientToolCall" | "OpenSignIn"
  readonly id: string
  readonly kind: "approval" | "client_tool" | "sign_in"
  readonly sessionId: string
  readonly turnId: string
  readonly request?: {
    readonly tool: { readonly id: string; readonly annotations?: Readonly<Record<string, unknown>> }
    readonly arguments: unknown
  }
  readonly requests?: ReadonlyArray<{ readonly id: string; readonly source: string }>
}
export interface OpenCallback {
  readonly callback: Callback
  readonly answerSchema: Form.JsonSchema
}
export interface Event {
  readonly _tag: string
  readonly seq: number
  readonly sessionId: string
  readonly [field: string]: unknown
}

export const $ = <E extends HTMLElement>(id: string) => document.getElementById(id) as E

export const text = (tag: string, content: string, className = "") => {
  const element = document.createElement(tag)
  element.textContent = content
  if (className !== "") element.className = className
  return element
}

export const button = (label: string, className: string, onClick: () => void) => {
  const element = text("button", label, className) as HTMLButtonElement
  element.type = "button"
  element.addEventListener("click", onClick)
  return element
}

export const subject = (callback: Callback) =>
  callback.request?.tool.id ?? (callback.requests ?? []).map((request) => request.source).join(", ")
