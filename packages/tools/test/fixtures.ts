import { Callback, type CallbackHandler, Ids, Permissions } from "@parley/core"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { DateTime, Effect, Schema } from "effect"

/** The seed's get_location: an optional precision with a default, a location back. */
export const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  parameters: {
    precision: Schema.Literals(["city", "street"]).annotate({ description: "How precise the location must be" }).pipe(
      Schema.withDecodingDefault(Effect.succeed("city" as const))
    )
  },
  success: Schema.Struct({ city: Schema.String, country: Schema.String }),
  annotations: ToolAnnotations.readOnly
})

/** The seed's read_location. */
export const readLocation = (_: ClientTool.Parameters<typeof getLocation>) => ({ city: "Lyon", country: "France" })

/** A tool with required parameters and a structured failure. */
export const sendEmail = ClientTool.make("send_email", {
  description: "Send an email.",
  parameters: Schema.Struct({ to: Schema.String, subject: Schema.String }),
  success: Schema.Struct({ sentAt: Schema.DateFromString }),
  failure: Schema.Struct({ code: Schema.Literals(["rejected", "offline"]) }),
  annotations: { destructiveHint: true, openWorldHint: true }
})

/** An `OpenClientToolCall` for tool `toolId`, built with core's classes. */
export const clientToolCall = (toolId: string, args: unknown) =>
  Effect.gen(function*() {
    const id = yield* Ids.toolId(toolId)
    return new Callback.OpenClientToolCall({
      id: yield* Ids.callbackId("cb_1"),
      sessionId: yield* Ids.sessionId("ses_1"),
      turnId: yield* Ids.turnId("turn_1"),
      openedAt: DateTime.makeUnsafe("2025-01-01T00:00:00Z"),
      request: new Callback.ClientToolRequest({
        tool: new Callback.ToolRef({ id, name: toolId.slice(toolId.indexOf(".") + 1) }),
        toolCallId: "call_1",
        arguments: args
      })
    })
  })

/** An approval of tool `toolId`. */
export const approval = (toolId: string, annotations: ToolAnnotations.ToolAnnotations = ToolAnnotations.none) =>
  Effect.gen(function*() {
    const id = yield* Ids.toolId(toolId)
    return new Callback.OpenApproval({
      id: yield* Ids.callbackId("cb_2"),
      sessionId: yield* Ids.sessionId("ses_1"),
      turnId: yield* Ids.turnId("turn_1"),
      openedAt: DateTime.makeUnsafe("2025-01-01T00:00:00Z"),
      request: new Callback.ApprovalRequest({
        tool: new Callback.ToolRef({ id, name: toolId.slice(toolId.indexOf(".") + 1), annotations }),
        toolCallId: "call_2",
        arguments: {},
        decidedBy: new Permissions.DefaultDecision()
      })
    })
  })

/** A sign-in to `source`. */
export const signIn = (source: string) =>
  Effect.gen(function*() {
    return new Callback.OpenSignIn({
      id: yield* Ids.callbackId("cb_3"),
      sessionId: yield* Ids.sessionId("ses_1"),
      turnId: yield* Ids.turnId("turn_1"),
      openedAt: DateTime.makeUnsafe("2025-01-01T00:00:00Z"),
      requests: [new Callback.SignInRequest({ id: `si_${source}`, source })]
    })
  })

/** The handler context of a callback of the waiting turn. */
export const context = Effect.gen(function*() {
  const sessionId = yield* Ids.sessionId("ses_1")
  const turnId = yield* Ids.turnId("turn_1")
  const value: CallbackHandler.Context = {
    session: { id: sessionId, turnId },
    waiting: { sessionId, turnId },
    fromWaitingTurn: true
  }
  return value
})
