/**
 * A chat page written as an AI SDK user writes one: `useChat` of `@ai-sdk/react` with the `DefaultChatTransport`
 * pointed at `/ai-sdk/<agent>`, `resume: true`, and `sendAutomaticallyWhen` for approvals and tool outputs. The chat
 * id is the Parley session (`#session=…&key=…&agent=…`). While its turn waits on a callback the page watches
 * (`resumeStream()`), so an answer given elsewhere shows; to answer itself it stops watching first (`stop()`).
 * Bundled with esbuild by `UseChat.test.ts`.
 */
import { useChat } from "@ai-sdk/react"
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage
} from "ai"
import { createElement as h, useEffect, useState } from "react"
import { createRoot } from "react-dom/client"

const hash = new URLSearchParams(location.hash.slice(1))
const sessionId = hash.get("session") ?? ""
const key = hash.get("key") ?? ""
const agent = hash.get("agent") ?? ""

type Part = UIMessage["parts"][number]
type ToolPart = Extract<Part, { toolCallId: string }>

const isTool = (part: Part): part is ToolPart => "toolCallId" in part

/** Whether the chat's last message waits on the user (an approval, a client tool). */
const waiting = (messages: ReadonlyArray<UIMessage>) => {
  const last = messages.at(-1)
  return last?.role === "assistant" &&
    last.parts.some((part) => isTool(part) && (part.state === "approval-requested" || part.state === "input-available"))
}

const Chat = () => {
  const [city, setCity] = useState("Lyon")
  const [input, setInput] = useState("")
  const { messages, sendMessage, status, error, stop, resumeStream, addToolApprovalResponse, addToolOutput } = useChat({
    id: sessionId,
    resume: true,
    transport: new DefaultChatTransport({ api: `/ai-sdk/${agent}`, headers: { authorization: `Bearer ${key}` } }),
    sendAutomaticallyWhen: (options) =>
      lastAssistantMessageIsCompleteWithApprovalResponses(options) ||
      lastAssistantMessageIsCompleteWithToolCalls(options)
  })
  // Watch a waiting turn: an answer from elsewhere (the CLI, another tab) moves it on here too.
  useEffect(() => {
    if (status === "ready" && waiting(messages)) void resumeStream()
  }, [status, messages])
  /** Stops watching (a resumed stream) before the page answers, so that its answer is sent at once. */
  const answer = async (send: () => void | PromiseLike<void>) => {
    if (status === "streaming" || status === "submitted") await stop()
    await send()
  }
  const tool = (part: ToolPart) =>
    h(
      "div",
      {
        className: "tool",
        key: part.toolCallId,
        "data-state": part.state,
        "data-tool-call-id": part.toolCallId,
        "data-approval-id": "approval" in part ? part.approval?.id : undefined
      },
      h("span", { className: "name" }, part.type),
      part.state === "approval-requested" ?
        [
          h("button", {
            key: "approve",
            onClick: () => answer(() => addToolApprovalResponse({ id: part.approval.id, approved: true }))
          }, "Approve"),
          h("button", {
            key: "deny",
            onClick: () =>
              answer(() => addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not today" }))
          }, "Deny")
        ] :
        null,
      part.state === "input-available" ?
        [
          h("input", { key: "city", "aria-label": "city", value: city, onChange: (e) => setCity(e.target.value) }),
          h("button", {
            key: "share",
            onClick: () =>
              answer(() =>
                addToolOutput({
                  tool: "get_location" as never,
                  toolCallId: part.toolCallId,
                  output: (city === "" ? { town: 1 } : { city }) as never
                })
              )
          }, "Share location")
        ] :
        null,
      part.state === "output-available" ? h("pre", { className: "output" }, JSON.stringify(part.output)) : null
    )
  return h(
    "main",
    { "data-status": status },
    messages.map((message) =>
      h(
        "article",
        { key: message.id, className: message.role, "data-message-id": message.id },
        message.parts.map((part, index) =>
          part.type === "text"
            ? h("p", { key: index, className: "text" }, part.text)
            : isTool(part)
            ? tool(part)
            : null
        )
      )
    ),
    error === undefined ? null : h("p", { className: "error" }, error.message),
    h(
      "form",
      {
        onSubmit: (event) => {
          event.preventDefault()
          void sendMessage({ text: input })
          setInput("")
        }
      },
      h("input", { "aria-label": "message", value: input, onChange: (e) => setInput(e.target.value) }),
      h("button", { type: "submit" }, "Send")
    )
  )
}

createRoot(document.getElementById("root")!).render(h(Chat))
