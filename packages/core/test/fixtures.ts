import { Answer, Callback, Ids, ParleyError, Permissions, ToolSpec, TurnState } from "@parley/core"
import type { CallbackHandler } from "@parley/core"
import { DateTime } from "effect"

export const t0 = DateTime.makeUnsafe(0)
export const t1 = DateTime.makeUnsafe(3_600_000)

export const sessionId = Ids.SessionId.make("ses_1")
export const turnId = Ids.TurnId.make("turn_1")
export const childSessionId = Ids.SessionId.make("ses_child")
export const childTurnId = Ids.TurnId.make("turn_child")
export const approvalId = Ids.CallbackId.make("cb_approval")
export const clientToolId = Ids.CallbackId.make("cb_client")
export const signInId = Ids.CallbackId.make("cb_signin")

export const readOnlyTool = new Callback.ToolRef({
  id: Ids.ToolId.make("connector.gmail.latest_email"),
  name: "latest_email",
  annotations: new ToolSpec.ToolAnnotations({ title: "Latest email", readOnlyHint: true })
})

export const writeTool = new Callback.ToolRef({
  id: Ids.ToolId.make("client.send_email"),
  name: "send_email",
  annotations: new ToolSpec.ToolAnnotations({ destructiveHint: true })
})

export const locationTool = new Callback.ToolRef({
  id: Ids.ToolId.make("client.get_location"),
  name: "get_location"
})

export const approvalFor = (tool: Callback.ToolRef, id: Ids.CallbackId = approvalId) =>
  new Callback.OpenApproval({
    id,
    sessionId,
    turnId,
    openedAt: t0,
    expiresAt: t1,
    request: new Callback.ApprovalRequest({
      tool,
      toolCallId: "call_1",
      arguments: { to: "ada@example.com", urgent: true, tags: ["a", "b"] },
      decidedBy: new Permissions.RuleMatched({
        index: 0,
        pattern: "client.*",
        rule: new Permissions.PermissionRule({ tools: ["client.*"], decision: "ask" })
      })
    })
  })

export const approval = approvalFor(writeTool)

export const approvalByDefault = new Callback.OpenApproval({
  id: Ids.CallbackId.make("cb_default"),
  sessionId: childSessionId,
  turnId: childTurnId,
  openedAt: t0,
  request: new Callback.ApprovalRequest({
    tool: readOnlyTool,
    toolCallId: "call_2",
    arguments: {},
    decidedBy: new Permissions.DefaultDecision()
  })
})

export const clientToolCall = new Callback.OpenClientToolCall({
  id: clientToolId,
  sessionId,
  turnId,
  openedAt: t0,
  expiresAt: t1,
  request: new Callback.ClientToolRequest({
    tool: locationTool,
    toolCallId: "call_3",
    arguments: { precise: false }
  })
})

export const signIn = new Callback.OpenSignIn({
  id: signInId,
  sessionId,
  turnId,
  openedAt: t0,
  requests: [
    new Callback.SignInRequest({ id: "req_gmail", source: "gmail" }),
    new Callback.SignInRequest({ id: "req_drive", source: "drive" })
  ]
})

export const callbacks: ReadonlyArray<Callback.Callback> = [approval, approvalByDefault, clientToolCall, signIn]

export const allow = new Answer.AllowApproval()
export const deny = new Answer.DenyApproval({})
export const denyWithReason = new Answer.DenyApproval({ reason: "not today" })
export const toolSuccess = Answer.ClientToolResult.success({ city: "Lyon", country: "France" })
export const toolFailure = Answer.ClientToolResult.failure({ message: "no GPS fix" })
export const signInAnswer = new Answer.SignInAnswer({ connected: ["req_gmail"], denied: ["req_drive"] })

export const answers: ReadonlyArray<Answer.Answer> = [
  allow,
  deny,
  denyWithReason,
  toolSuccess,
  toolFailure,
  signInAnswer
]

/** One value of every ParleyError member. */
export const errors: ReadonlyArray<ParleyError.ParleyError> = [
  new ParleyError.InvalidId({
    module: "Ids",
    method: "sessionId",
    kind: "sessionId",
    value: "session-1",
    description: "a session id looks like ses_…"
  }),
  new ParleyError.AnswerMismatch({ module: "Turn", method: "answer", callbackId: "cb_approval", reason: "wrong kind" }),
  new ParleyError.CallbackNotOpen({
    module: "Turn",
    method: "answer",
    callbackId: "cb_gone",
    description: "it expired"
  }),
  new ParleyError.CallbackAlreadyAnswered({ module: "Turn", method: "answer", callbackId: "cb_twice" }),
  new ParleyError.SessionNotFound({ module: "Session", method: "get", sessionId: "ses_missing" }),
  new ParleyError.TurnNotFound({ module: "Turn", method: "result", sessionId: "ses_1", turnId: "turn_missing" }),
  new ParleyError.PolicyInvalid({
    module: "Policy",
    method: "validate",
    issues: ["bad pattern client.**", "unknown namespace other"]
  }),
  new ParleyError.AgentInvalid({
    module: "Agent",
    method: "make",
    agent: "assistant",
    issues: ["duplicate tool client.x"]
  }),
  new ParleyError.ModelFailure({
    module: "Model",
    method: "generate",
    model: "mistral-large-latest",
    description: "HTTP 503"
  }),
  new ParleyError.TransportFailure({ module: "HttpTransport", method: "answer", description: "connection refused" }),
  new ParleyError.StepLimitReached({ module: "Engine", method: "modelStep", limit: 25 }),
  new ParleyError.ToolFailure({ module: "Engine", method: "runTool", toolId: "connector.gmail.latest_email" }),
  new ParleyError.HandlerFailed({
    module: "Turn",
    method: "result",
    callbackId: "cb_approval",
    kind: "approval",
    description: "boom"
  }),
  new ParleyError.RuntimeMissing({ module: "Agent", method: "run", service: "@parley/core/Transport" }),
  new ParleyError.GrantNotFound({ module: "Session", method: "revokeGrant", sessionId: "ses_1", grantId: "grant_9" }),
  new ParleyError.LimitExceeded({
    module: "HttpTransport",
    method: "createSession",
    limit: "sessionsPerMinute",
    max: 600,
    retryAfter: 12
  }),
  new ParleyError.NotAllowedToAnswer({
    module: "Turn",
    method: "answer",
    callbackId: "cb_guarded",
    principal: "by id (mallory)",
    approvers: new Permissions.Approvers({ roles: ["finance"], principals: ["alice"] })
  })
]

export const completed = new TurnState.Completed({ sessionId, turnId, text: "Lyon, France." })
export const failed = new TurnState.Failed({ sessionId, turnId, error: errors[8]! })
export const cancelled = new TurnState.Cancelled({ sessionId, turnId })
export const blocked = new TurnState.Blocked({
  sessionId,
  turnId,
  callbacks: [approval, clientToolCall, signIn],
  cursor: 7
})
export const finals: ReadonlyArray<TurnState.Final> = [completed, failed, cancelled]

export const context = (fromWaitingTurn = true): CallbackHandler.Context => ({
  session: { id: childSessionId, turnId: childTurnId },
  waiting: { sessionId, turnId },
  fromWaitingTurn
})
