/**
 * The examples' `gmail` connector is a real MCP server (`shared/mailServer.ts`): its `latest_email` tool, called over
 * Streamable HTTP on 127.0.0.1, returns the demo email the guides' brain reads; a session asks before its first call.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Ids } from "@parley/core"
import { Connectors } from "@parley/runtime"
import { Effect, Schema } from "effect"
import * as MailServer from "../shared/mailServer.js"

describe("the examples' gmail connector", () => {
  it.live("is the mail MCP server: a read-only latest_email that returns the demo email; sign-in asked first", () =>
    Effect.scoped(Effect.gen(function*() {
      const gmail = yield* MailServer.gmail
      assert.strictEqual(gmail.askFirst, true)
      const [tool] = gmail.tools
      assert.strictEqual(tool.spec.id, "connector.gmail.latest_email")
      assert.isTrue(tool.spec.annotations.readOnlyHint)
      const id = "ses_examples" as Ids.SessionId
      const result = yield* tool.run({}, { treeId: id, sessionId: id, toolCallId: "call_1" })
      const email = Schema.decodeUnknownSync(Connectors.Email)(result)
      assert.strictEqual(email.subject, "Dinner on Friday?")
      assert.strictEqual(email.from, "Camille Martin <camille@example.com>")
    })))
})
