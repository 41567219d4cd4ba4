/**
 * The mail server over Streamable HTTP on 127.0.0.1 (a free port), with the SDK's `StreamableHTTPServerTransport`:
 * one transport and one `McpServer` per session, as the SDK's examples do. `forgetSessions` makes it answer `404`
 * to the sessions it knew (as a restarted server does); a `crash` call cuts every open connection mid-answer.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { Scope } from "effect"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Observed } from "./mail.js"
import { mailServer, observed } from "./mail.js"

export interface MailHttp {
  readonly url: string
  readonly seen: Observed
  /** The servers of the live sessions. */
  readonly servers: ReadonlyArray<McpServer>
  readonly sessions: () => number
  readonly forgetSessions: () => void
}

export const serveMail: Effect.Effect<MailHttp, never, Scope.Scope> = Effect.gen(function*() {
  const seen = observed()
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>()
  const http: Http.Server = Http.createServer((req, res) => {
    const id = req.headers["mcp-session-id"]
    const known = typeof id === "string" ? sessions.get(id) : undefined
    if (known !== undefined) return void known.transport.handleRequest(req, res)
    if (typeof id === "string") {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null })
      )
      return
    }
    const server = mailServer(seen, { crash: () => http.closeAllConnections() })
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, server })
    })
    void server.connect(transport).then(() => transport.handleRequest(req, res))
  })
  yield* Effect.acquireRelease(
    Effect.callback<void>((resume) => void http.listen(0, "127.0.0.1", () => resume(Effect.void))),
    () =>
      Effect.callback<void>((resume) => {
        http.closeAllConnections()
        http.close(() => resume(Effect.void))
      })
  )
  const { port } = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    get servers() {
      return [...sessions.values()].map((session) => session.server)
    },
    sessions: () => sessions.size,
    forgetSessions: () => sessions.clear()
  }
})
