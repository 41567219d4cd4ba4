/**
 * A "mail" MCP server written with the SDK's own `McpServer`: a read-only `list_messages`, a destructive
 * `send_message`, and for the tests a `wait_forever` that only ends when cancelled and a `crash` that ends the server
 * mid-call. `addTool` registers a tool after the connection (the SDK sends `notifications/tools/list_changed`).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { z } from "zod"

export interface Message {
  readonly from: string
  readonly subject: string
  readonly snippet: string
}

export const inbox: ReadonlyArray<Message> = [
  { from: "Camille Martin <camille@example.com>", subject: "Dinner on Friday?", snippet: "Are you free at 8?" },
  { from: "Bank <no-reply@bank.example>", subject: "Your statement", snippet: "Your December statement is ready." }
]

/** What the tests observe of the server: calls received, cancellations seen, messages sent. */
export interface Observed {
  readonly calls: Array<{ readonly tool: string; readonly args: unknown }>
  readonly cancelled: Array<string>
  readonly sent: Array<{ readonly to: string; readonly body: string }>
}

export const observed = (): Observed => ({ calls: [], cancelled: [], sent: [] })

export const mailServer = (seen: Observed, options: { readonly crash: () => void }) => {
  const server = new McpServer({ name: "mail", version: "1.0.0" }, { capabilities: { logging: {} } })
  server.registerTool("list_messages", {
    title: "List messages",
    description: "The messages in the user's inbox, newest first.",
    inputSchema: { limit: z.number().int().min(1).optional().describe("At most this many messages.") },
    outputSchema: {
      messages: z.array(z.object({ from: z.string(), subject: z.string(), snippet: z.string() }))
    },
    annotations: { readOnlyHint: true, openWorldHint: false }
  }, ({ limit }) => {
    seen.calls.push({ tool: "list_messages", args: { limit } })
    const messages = inbox.slice(0, limit ?? inbox.length)
    return {
      content: [{ type: "text", text: JSON.stringify({ messages }) }],
      structuredContent: { messages: [...messages] }
    }
  })
  server.registerTool("send_message", {
    description: "Send an email.",
    inputSchema: { to: z.string(), body: z.string() },
    annotations: { destructiveHint: true, openWorldHint: true }
  }, ({ body, to }) => {
    seen.calls.push({ tool: "send_message", args: { to, body } })
    if (!to.includes("@")) return { isError: true, content: [{ type: "text", text: `No such address: ${to}` }] }
    seen.sent.push({ to, body })
    return { content: [{ type: "text", text: `Sent to ${to}.` }] }
  })
  server.registerTool("wait_forever", {
    description: "Waits until the call is cancelled.",
    annotations: { readOnlyHint: true }
  }, (extra) =>
    new Promise((resolve) => {
      seen.calls.push({ tool: "wait_forever", args: {} })
      extra.signal.addEventListener("abort", () => {
        seen.cancelled.push(String(extra.requestId))
        resolve({ content: [{ type: "text", text: "cancelled" }] })
      })
    }))
  server.registerTool("crash", {
    description: "The server dies while it answers (after a first notification: the answer has begun).",
    annotations: { readOnlyHint: true }
  }, async (extra) => {
    seen.calls.push({ tool: "crash", args: {} })
    await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "crashing" } })
    setTimeout(options.crash, 50)
    return new Promise(() => undefined)
  })
  return server
}

/** Registers `archive_message` on a connected server: its clients get `notifications/tools/list_changed`. */
export const addTool = (server: McpServer) =>
  server.registerTool("archive_message", {
    description: "Archive a message.",
    inputSchema: { subject: z.string() },
    annotations: { idempotentHint: true, destructiveHint: false }
  }, ({ subject }) => ({ content: [{ type: "text", text: `Archived ${subject}.` }] }))
