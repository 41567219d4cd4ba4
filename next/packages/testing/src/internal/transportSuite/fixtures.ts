/**
 * The fixtures of the single-agent scenarios: the callbacks guide's `assistant` agent (a `get_location` client tool
 * and the `gmail` connector), the brains that drive it, and the answers a person gives.
 */
import * as Agent from "@parley/core/Agent"
import type { CallbackTimeouts } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import type { Callback, OpenSignIn } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import { ToolId } from "@parley/core/Ids"
import { PermissionPolicy, PermissionRule } from "@parley/core/Permissions"
import { ToolAnnotations, ToolSpec } from "@parley/core/ToolSpec"
import * as ScriptedModel from "../../ScriptedModel.js"

export const getLocation = new ToolSpec({
  id: ToolId.make("client.get_location"),
  name: "get_location",
  description: "The user's current location.",
  parameters: { type: "object", properties: { precision: { type: "string", enum: ["city", "street"] } } },
  success: {
    type: "object",
    properties: { city: { type: "string" }, country: { type: "string" } },
    required: ["city", "country"]
  },
  annotations: new ToolAnnotations({ readOnlyHint: true })
})

export const policy = (decision: "allow" | "deny" | "ask") =>
  new PermissionPolicy({
    default: "allow",
    rules: [new PermissionRule({ tools: ["client.get_location"], decision })]
  })

/** The callbacks guide's agent: asks before each `get_location` call unless another policy is given. */
export const assistant = (options?: {
  readonly permissions?: PermissionPolicy | undefined
  readonly timeouts?: CallbackTimeouts | undefined
}): Agent.Agent =>
  Agent.make({
    name: "assistant",
    model: "scripted",
    instructions: "Use your tools. Answer in one short sentence.",
    tools: [getLocation],
    connectors: ["gmail"],
    permissions: options?.permissions ?? policy("ask"),
    timeouts: options?.timeouts
  })

export const LOCATION: ScriptedModel.ToolCall = { name: "get_location", params: { precision: "city" } }
export const EMAIL: ScriptedModel.ToolCall = { name: "gmail_latest_email", params: {} }

export const IN_LYON = "You're in Lyon, France."
export const NO_LOCATION = "I could not find where you are."
export const EMAIL_ABOUT = "Your latest email is about: Dinner on Friday?"
export const NO_EMAIL = "I could not read your email."

const describeResult = (name: string, result: ScriptedModel.ToolResult | undefined): string => {
  const value = result !== undefined && !result.isFailure ? result.result as Record<string, unknown> : undefined
  if (name === LOCATION.name) {
    return value === undefined ? NO_LOCATION : `You're in ${String(value.city)}, ${String(value.country)}.`
  }
  return value === undefined ? NO_EMAIL : `Your latest email is about: ${String(value.subject)}`
}

/**
 * A brain that makes the given rounds of tool calls (each round once the previous round's results are in the
 * prompt), then answers with one sentence per tool call, from its result.
 */
export const brain = (...rounds: ReadonlyArray<ReadonlyArray<ScriptedModel.ToolCall>>) =>
  ScriptedModel.fromFunction((call) => {
    const results = ScriptedModel.toolResults(call)
    let made = 0
    for (const round of rounds) {
      if (results.length === made) return ScriptedModel.reply({ toolCalls: round })
      made += round.length
    }
    return ScriptedModel.text(
      rounds.flat().map((toolCall) => describeResult(toolCall.name, results.find((r) => r.name === toolCall.name)))
        .join(" ")
    )
  })

/** `gmail_latest_email` and `get_location` at once (concurrent tool calls). */
export const concurrent = () => brain([EMAIL, LOCATION])
/** `gmail_latest_email`, then `get_location`: the callbacks come one after the other. */
export const sequential = () => brain([EMAIL], [LOCATION])

export const lyon = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
export const allow = new Answer.AllowApproval()

export const signInAnswer = (callback: OpenSignIn, signIn: "connected" | "denied"): Answer.SignInAnswer => {
  const ids = callback.requests.map((request) => request.id)
  return new Answer.SignInAnswer(signIn === "connected" ? { connected: ids } : { denied: ids })
}

/** The answer a person gives: allow, Lyon, and the sign-in as told. */
export const answerFor = (callback: Callback, signIn: "connected" | "denied" = "denied"): Answer.Answer => {
  switch (callback._tag) {
    case "OpenApproval":
      return allow
    case "OpenClientToolCall":
      return lyon
    case "OpenSignIn":
      return signInAnswer(callback, signIn)
  }
}

/** Handlers that answer everything like `answerFor`. */
export const answerAll = (signIn: "connected" | "denied" = "denied") =>
  CallbackHandler.layer({
    approval: () => allow,
    clientTool: () => lyon,
    signIn: (callback) => signInAnswer(callback, signIn)
  })
