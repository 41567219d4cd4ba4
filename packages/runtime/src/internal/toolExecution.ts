import type { Answer } from "@parley/core/Answer"
import {
  ApprovalRequest,
  ClientToolRequest,
  OpenApproval,
  OpenClientToolCall,
  OpenSignIn,
  SignInRequest,
  ToolRef
} from "@parley/core/Callback"
import type { TurnId } from "@parley/core/Ids"
import { PermissionPolicy } from "@parley/core/Permissions"
import type { ToolCallStarted } from "@parley/core/TurnEvent"
import { ToolCallCompleted } from "@parley/core/TurnEvent"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as Effect from "effect/Effect"
import type { Service as SessionStore } from "../SessionStore.js"
import type { Broker } from "./callbacks.js"
import * as Callbacks from "./callbacks.js"
import { append } from "./log.js"
import type { Outcome, ResolvedTool, SessionRuntime, TurnContext } from "./state.js"

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

interface Result {
  readonly isFailure: boolean
  readonly result: unknown
}

const failure = (result: string): Result => ({ isFailure: true, result })

const allowAll = new PermissionPolicy({ default: "allow", rules: [] })

/** What a closed callback that did not carry the expected answer means for the tool call. */
const unanswered = (outcome: Outcome, what: string): Result => {
  switch (outcome._tag) {
    case "expired":
      return failure(`The ${what} expired before anyone answered.`)
    case "cancelled":
      return failure(`The ${what} was cancelled.`)
    default:
      return failure(`The ${what} closed when its turn ended.`)
  }
}

const answerOf = <Tag extends Answer["_tag"]>(
  outcome: Outcome,
  ...tags: ReadonlyArray<Tag>
): Extract<Answer, { _tag: Tag }> | undefined =>
  outcome._tag === "answered" && (tags as ReadonlyArray<string>).includes(outcome.answer._tag)
    ? outcome.answer as Extract<Answer, { _tag: Tag }>
    : undefined

const ref = (tool: ResolvedTool) =>
  new ToolRef({ id: tool.spec.id, name: tool.spec.name, annotations: tool.spec.annotations })

/** Asks the permission policy; `ask` opens an approval. Undefined means the call may go ahead. */
const authorize = (broker: Broker, ctx: TurnContext, tool: ResolvedTool, call: ToolCall) =>
  Effect.gen(function*() {
    const spec = ctx.session.session.agent
    // Of the subagent tools, only agents.spawn asks: the others act on subagents already approved.
    if (tool._tag === "builtin" && tool.builtin !== "spawn") return undefined
    const evaluation = Policy.evaluate(spec.permissions ?? allowAll, tool.spec.id)
    if (evaluation.decision === "allow") return undefined
    if (evaluation.decision === "deny") {
      return failure(`The permission policy denies ${tool.spec.id}; the call was not made.`)
    }
    const decidedBy = evaluation.decidedBy
    const outcome = yield* Callbacks.open(broker, {
      session: ctx.session,
      tree: ctx.tree,
      timeout: spec.timeouts.approval,
      make: (fields) =>
        new OpenApproval({
          ...fields,
          sessionId: ctx.session.session.sessionId,
          turnId: ctx.turnId,
          request: new ApprovalRequest({ tool: ref(tool), toolCallId: call.id, arguments: call.params, decidedBy })
        })
    })
    const answer = answerOf(outcome, "AllowApproval", "DenyApproval")
    if (answer === undefined) return unanswered(outcome, `approval request for ${tool.spec.name}`)
    if (answer._tag === "AllowApproval") return undefined
    const reason = answer.reason === undefined ? "" : `: ${answer.reason}`
    return failure(`The user denied the call to ${tool.spec.name}${reason}.`)
  })

const runClientTool = (broker: Broker, ctx: TurnContext, tool: ResolvedTool, call: ToolCall) =>
  Effect.gen(function*() {
    const outcome = yield* Callbacks.open(broker, {
      session: ctx.session,
      tree: ctx.tree,
      timeout: ctx.session.session.agent.timeouts.clientTool,
      success: tool.spec.success,
      make: (fields) =>
        new OpenClientToolCall({
          ...fields,
          sessionId: ctx.session.session.sessionId,
          turnId: ctx.turnId,
          request: new ClientToolRequest({ tool: ref(tool), toolCallId: call.id, arguments: call.params })
        })
    })
    const answer = answerOf(outcome, "ClientToolResult")
    if (answer === undefined) return unanswered(outcome, `call to the client tool ${tool.spec.name}`)
    return { isFailure: answer.isFailure, result: answer.result }
  })

const runConnectorTool = (
  broker: Broker,
  ctx: TurnContext,
  tool: Extract<ResolvedTool, { _tag: "connector" }>,
  call: ToolCall
) =>
  Effect.gen(function*() {
    const source = tool.connector.source
    if (!ctx.session.connected.has(source)) {
      const outcome = yield* Callbacks.open(broker, {
        session: ctx.session,
        tree: ctx.tree,
        timeout: ctx.session.session.agent.timeouts.approval,
        make: (fields) =>
          new OpenSignIn({
            ...fields,
            sessionId: ctx.session.session.sessionId,
            turnId: ctx.turnId,
            requests: [new SignInRequest({ id: source, source })]
          })
      })
      const answer = answerOf(outcome, "SignInAnswer")
      if (answer === undefined) return unanswered(outcome, `sign-in to ${source}`)
      if (!answer.connected.includes(source)) {
        return failure(
          `The user denied the sign-in to ${source}, so ${tool.spec.name} could not run. ` +
            `The ${source} connector stays disconnected until the user signs in.`
        )
      }
      ctx.session.connected.add(source)
    }
    return yield* tool.run(call.params).pipe(
      Effect.match({ onFailure: failure, onSuccess: (result): Result => ({ isFailure: false, result }) })
    )
  })

const stringParam = (params: unknown, key: string): string | undefined => {
  const value = typeof params === "object" && params !== null ? (params as Record<string, unknown>)[key] : undefined
  return typeof value === "string" ? value : undefined
}

const runBuiltin = (ctx: TurnContext, tool: Extract<ResolvedTool, { _tag: "builtin" }>, call: ToolCall) => {
  const params = call.params
  const ids = typeof params === "object" && params !== null
    ? (params as Record<string, unknown>)["sessionIds"]
    : undefined
  const required = (key: string, use: (value: string) => Effect.Effect<unknown, string>) => {
    const value = stringParam(params, key)
    return value === undefined ? Effect.fail(`${tool.spec.name} needs a "${key}" string.`) : use(value)
  }
  const effect: Effect.Effect<unknown, string> = tool.builtin === "spawn"
    ? required(
      "agent",
      (agent) => required("task", (task) => ctx.subagents.spawn(ctx.session, ctx.turnId, agent, task))
    )
    : tool.builtin === "message"
    ? required("sessionId", (id) => required("message", (message) => ctx.subagents.message(ctx.session, id, message)))
    : tool.builtin === "wait"
    ? ctx.subagents.wait(
      ctx.session,
      Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : undefined
    )
    : required("sessionId", (id) => ctx.subagents.interrupt(ctx.session, id))
  return Effect.match(effect, { onFailure: failure, onSuccess: (result): Result => ({ isFailure: false, result }) })
}

/** Runs one tool call of the model: policy, approval, then the tool; appends its `ToolCallCompleted`. */
export const run = (broker: Broker, ctx: TurnContext, call: ToolCall): Effect.Effect<void> =>
  Effect.gen(function*() {
    const tool = ctx.tools.get(call.name)
    const result: Result = tool === undefined
      ? failure(`There is no tool named ${call.name}.`)
      : (yield* authorize(broker, ctx, tool, call)) ??
        (tool._tag === "client"
          ? yield* runClientTool(broker, ctx, tool, call)
          : tool._tag === "builtin"
          ? yield* runBuiltin(ctx, tool, call)
          : yield* runConnectorTool(broker, ctx, tool, call))
    yield* append(broker.store, ctx.session, [
      (meta) =>
        new ToolCallCompleted({
          sessionId: ctx.session.session.sessionId,
          turnId: ctx.turnId,
          ...meta,
          toolCallId: call.id,
          toolId: tool?.spec.id ?? ("client.unknown" as ToolCallCompleted["toolId"]),
          name: call.name,
          isFailure: result.isFailure,
          result: result.result
        })
    ])
  })

/** A cancelled turn's tool calls that had no result get one, so the conversation stays whole for the model. */
export const closeUnfinished = (store: SessionStore, session: SessionRuntime, turnId: TurnId): Effect.Effect<void> =>
  Effect.gen(function*() {
    const events = yield* store.read(session.session.sessionId, 0)
    const completed = new Set(events.flatMap((event) => (event._tag === "ToolCallCompleted" ? [event.toolCallId] : [])))
    const unfinished = events.filter((event): event is ToolCallStarted =>
      event._tag === "ToolCallStarted" && event.turnId === turnId && !completed.has(event.toolCallId)
    )
    yield* append(
      store,
      session,
      unfinished.map((call) => (meta) =>
        new ToolCallCompleted({
          sessionId: session.session.sessionId,
          turnId,
          ...meta,
          toolCallId: call.toolCallId,
          toolId: call.toolId,
          name: call.name,
          isFailure: true,
          result: `The call to ${call.name} was cancelled.`
        })
      )
    )
  })
