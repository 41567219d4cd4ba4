import { assert, describe, it } from "@effect/vitest"
import { McpConnector } from "@parley/mcp"
import type { Connectors } from "@parley/runtime"
import { Effect, Exit, Fiber } from "effect"
import * as Net from "node:net"
import { eventually, stdioMail, within } from "./fixtures.js"
import { serveMail } from "./servers/http.js"
import { addTool } from "./servers/mail.js"

const context = { treeId: "ses_test", sessionId: "ses_test", toolCallId: "call_1" } as Parameters<
  Connectors.ConnectorTool["run"]
>[1]

const tool = (connector: Connectors.Connector, name: string) => {
  const found = connector.tools.find((tool) => tool.spec.name === name)
  if (found === undefined) return assert.fail(`no tool ${name} in ${connector.tools.map((t) => t.spec.name)}`)
  return found
}

/** A port nothing listens on. */
const closedPort = Effect.callback<number>((resume) => {
  const server = Net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

describe("McpConnector over Streamable HTTP", () => {
  it.live("lists the server's tools with stable ids, JSON Schemas and MCP annotations", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      assert.deepStrictEqual(
        connector.tools.map((tool) => tool.spec.id),
        [
          "connector.mail.list_messages",
          "connector.mail.send_message",
          "connector.mail.wait_forever",
          "connector.mail.crash"
        ]
      )
      const list = tool(connector, "list_messages").spec
      assert.strictEqual(list.description, "The messages in the user's inbox, newest first.")
      assert.deepStrictEqual(
        { ...list.annotations },
        {
          title: "List messages",
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: false,
          openWorldHint: false
        }
      )
      assert.strictEqual(list.parameters.type, "object")
      assert.deepStrictEqual(Object.keys(list.parameters.properties as object), ["limit"])
      const send = tool(connector, "send_message").spec
      assert.deepStrictEqual(
        { ...send.annotations },
        { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }
      )
      assert.deepStrictEqual(send.parameters.required, ["to", "body"])
      // A connector that signs in on the server's demand does not ask first.
      assert.strictEqual(connector.askFirst, false)
    })))

  it.live("a call returns the server's result: structured content, text, or the server's tool error", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const listed = yield* tool(connector, "list_messages").run({ limit: 1 }, context)
      assert.deepStrictEqual(listed, {
        messages: [{
          from: "Camille Martin <camille@example.com>",
          subject: "Dinner on Friday?",
          snippet: "Are you free at 8?"
        }]
      })
      const sent = yield* tool(connector, "send_message").run({ to: "camille@example.com", body: "Yes!" }, context)
      assert.strictEqual(sent, "Sent to camille@example.com.")
      assert.deepStrictEqual(mail.seen.sent, [{ to: "camille@example.com", body: "Yes!" }])
      const refused = yield* Effect.flip(tool(connector, "send_message").run({ to: "nobody", body: "?" }, context))
      assert.strictEqual(refused, "No such address: nobody")
      // Arguments the server's schema refuses: a tool error, and the connection stays.
      const invalid = yield* Effect.flip(tool(connector, "list_messages").run({ limit: "many" }, context))
      assert.include(invalid, "limit")
      assert.strictEqual(mail.sessions(), 1)
    })))

  it.live("a server that dies mid-call gives a tool error at once; the next call connects again", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const error = yield* within("the crashed call", Effect.flip(tool(connector, "crash").run({}, context)), 5)
      assert.include(error, "The mail server could not run crash")
      const listed = yield* tool(connector, "list_messages").run({ limit: 1 }, context)
      assert.strictEqual((listed as { messages: Array<unknown> }).messages.length, 1)
      assert.strictEqual(mail.sessions(), 2)
    })))

  it.live("a session the server forgot (404) is made again and the same call sent once more", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      mail.forgetSessions()
      const sent = yield* tool(connector, "send_message").run({ to: "camille@example.com", body: "Again" }, context)
      assert.strictEqual(sent, "Sent to camille@example.com.")
      assert.deepStrictEqual(mail.seen.sent, [{ to: "camille@example.com", body: "Again" }])
      assert.strictEqual(mail.sessions(), 1)
    })))

  it.live("an interrupted call sends notifications/cancelled to the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const fiber = yield* Effect.forkChild(tool(connector, "wait_forever").run({}, context))
      yield* eventually("the server got the call", () => mail.seen.calls.some((call) => call.tool === "wait_forever"))
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.hasInterrupts(exit))
      yield* eventually("the server saw the cancellation", () => mail.seen.cancelled.length === 1)
    })))

  it.live("a call past its timeout ends with a tool error (and the server is told to stop)", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url, timeout: "300 millis" })
      const error = yield* within("the call", Effect.flip(tool(connector, "wait_forever").run({}, context)), 5)
      assert.include(error, "The mail server could not run wait_forever")
      assert.include(String(error).toLowerCase(), "timed out")
      yield* eventually("the server saw the cancellation", () => mail.seen.cancelled.length === 1)
      // The connection stays: the next call needs no new session.
      yield* tool(connector, "list_messages").run({}, context)
      assert.strictEqual(mail.sessions(), 1)
    })))

  it.live("list_changed: the new tool is listed and the revision grows", () =>
    Effect.scoped(Effect.gen(function*() {
      const mail = yield* serveMail
      const connector = yield* McpConnector.http({ source: "mail", url: mail.url })
      const before = connector.revision?.() ?? 0
      for (const server of mail.servers) addTool(server)
      yield* eventually("the tool list was read again", () => connector.tools.length === 5)
      assert.isAbove(connector.revision?.() ?? 0, before)
      assert.strictEqual(tool(connector, "archive_message").spec.id, "connector.mail.archive_message")
      const archived = yield* tool(connector, "archive_message").run({ subject: "Your statement" }, context)
      assert.strictEqual(archived, "Archived Your statement.")
    })))

  it.live("a server that cannot be reached fails the connector with McpConnectError", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const error = yield* Effect.flip(
        Effect.scoped(McpConnector.http({ source: "mail", url: `http://127.0.0.1:${port}/mcp` }))
      )
      assert.strictEqual(error._tag, "McpConnectError")
      assert.strictEqual(error.source, "mail")
      assert.include(error.message, "could not connect to the mail MCP server")
    }))
})

describe("McpConnector over stdio", () => {
  it.live("lists the tools of a child process and returns its results", () =>
    Effect.scoped(Effect.gen(function*() {
      const connector = yield* McpConnector.stdio(stdioMail)
      assert.deepStrictEqual(connector.tools.map((tool) => tool.spec.id).slice(0, 2), [
        "connector.mail.list_messages",
        "connector.mail.send_message"
      ])
      assert.isTrue(tool(connector, "list_messages").spec.annotations.readOnlyHint)
      const listed = yield* tool(connector, "list_messages").run({}, context)
      assert.strictEqual((listed as { messages: Array<unknown> }).messages.length, 2)
    })), 20_000)

  it.live(
    "a child that dies mid-call gives a tool error; the next call starts it again",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const connector = yield* McpConnector.stdio(stdioMail)
        const error = yield* within("the crashed call", Effect.flip(tool(connector, "crash").run({}, context)), 5)
        assert.include(error, "The mail server could not run crash")
        const sent = yield* tool(connector, "send_message").run({ to: "camille@example.com", body: "Hi" }, context)
        assert.strictEqual(sent, "Sent to camille@example.com.")
      })),
    20_000
  )

  it.live("a command that does not start fails the connector with McpConnectError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(McpConnector.stdio({ source: "files", command: "/nonexistent/parley-mcp-server" }))
      )
      assert.strictEqual(error._tag, "McpConnectError")
      assert.include(error.message, "files")
    }))
})
