/**
 * The guides' `gmail` connector, as a real MCP server: an `McpServer` (the official SDK's) with a read-only
 * `latest_email` tool, served over Streamable HTTP on a free port of 127.0.0.1 for as long as the program runs (offline:
 * nothing leaves the machine). The program reaches it the way it would reach any MCP server, with
 * `McpConnector.http` — `askFirst: true`, so a session asks the user to connect Gmail before its first call, as the
 * guides show.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { McpConnector } from "@parley/mcp"
import { Connectors } from "@parley/runtime"
import { Effect, Schema } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { z } from "zod"

/** The inbox of the demo: its latest email is the one the guides' model reads. */
const inbox: ReadonlyArray<Connectors.Email> = [
  new Connectors.Email({
    from: "Camille Martin <camille@example.com>",
    subject: "Dinner on Friday?",
    received: "2026-12-01T18:42:00Z",
    snippet: "Are you free for dinner on Friday at 8? I booked a table near the Place Bellecour."
  })
]

const mailServer = () => {
  const server = new McpServer({ name: "gmail", version: "1.0.0" })
  server.registerTool("latest_email", {
    description: "The most recent email in the user's inbox.",
    outputSchema: { from: z.string(), subject: z.string(), received: z.string(), snippet: z.string() },
    annotations: { readOnlyHint: true, openWorldHint: false }
  }, () => {
    const latest = inbox[inbox.length - 1]
    if (latest === undefined) return { isError: true, content: [{ type: "text", text: "The inbox is empty." }] }
    const email = Schema.encodeSync(Connectors.Email)(latest)
    return { content: [{ type: "text", text: JSON.stringify(email) }], structuredContent: { ...email } }
  })
  return server
}

/** The server, stateless (a server and a transport per request, as the SDK's stateless example does). */
const serve = Effect.acquireRelease(
  Effect.callback<Http.Server>((resume) => {
    const http = Http.createServer((req, res) => {
      const server = mailServer()
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      res.on("close", () => void transport.close().then(() => server.close()))
      void server.connect(transport).then(() => transport.handleRequest(req, res))
    })
    http.listen(0, "127.0.0.1", () => resume(Effect.succeed(http)))
  }),
  (http) =>
    Effect.callback<void>((resume) => {
      http.closeAllConnections()
      http.close(() => resume(Effect.void))
    })
)

/** The `gmail` connector over the mail MCP server, both alive for the scope. */
export const gmail = Effect.flatMap(serve, (http) =>
  McpConnector.http({
    source: "gmail",
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    askFirst: true
  }))
