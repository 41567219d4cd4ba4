/**
 * Agents: define one with `Agent.make`, then run it (`Agent.run`), start a session (`Agent.startSession`) or find
 * one by id (`Agent.session`). Every call needs a `Transport` in context — `LocalTransport.layer` in-process, the
 * HTTP transport across processes — and answers callbacks with the `CallbackHandler` in context while it waits.
 *
 * @example
 * ```ts
 * import { Agent, CallbackHandler, Permissions } from "@parley/core"
 * import { Effect } from "effect"
 *
 * const assistant = Agent.make({
 *   name: "assistant",
 *   model: "mistral-large-latest",
 *   instructions: "Use your tools. Answer in one short sentence.",
 *   connectors: ["gmail"],
 *   permissions: new Permissions.PermissionPolicy({ default: "allow" })
 * })
 *
 * const program = Agent.run(assistant, "What is my latest email about?").pipe(
 *   Effect.provide(CallbackHandler.layer(CallbackHandler.denyAllSignIns))
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as AgentSpec from "./AgentSpec.js"
import * as CallbackHandler from "./CallbackHandler.js"
import * as Ids from "./Ids.js"
import type { InvalidId, LimitExceeded, PolicyInvalid, SessionNotFound, TransportFailure } from "./ParleyError.js"
import type { RuntimeMissing } from "./ParleyError.js"
import { AgentInvalid } from "./ParleyError.js"
import { PermissionPolicy } from "./Permissions.js"
import * as Session from "./Session.js"
import { ToolSpec } from "./ToolSpec.js"
import type { Transport } from "./Transport.js"
import { transportFor } from "./Transport.js"
import * as Turn from "./Turn.js"
import type { TurnState } from "./TurnState.js"

/**
 * A tool an agent can carry: a bare `ToolSpec`, or a tool value (`ClientTool`, `Tool` from `@parley/tools`) with
 * its spec and, for tools the SDK runs, the handler that answers its calls.
 *
 * @since 0.1.0
 * @category Models
 */
export type ToolLike = ToolSpec | {
  readonly spec: ToolSpec
  readonly callbackHandler?: CallbackHandler.Service | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Agent {
  readonly spec: AgentSpec.AgentSpec
  /** Answers the calls of the agent's tools that have handlers (for the whole tree). */
  readonly handler: CallbackHandler.Service | undefined
  /** What is wrong with the options it was made with: a session of it does not start (`AgentInvalid`). */
  readonly issues: ReadonlyArray<string>
}

/**
 * @since 0.1.0
 * @category Models
 */
export type Options =
  & CommonOptions
  & (
    | {
      /** The permission policy: a default decision and ordered rules. */
      readonly permissions?: PermissionPolicy | undefined
      readonly permissionMode?: undefined
    }
    | {
      /** Shorthand: `permissionMode: "ask"` is a policy whose default is `ask` (give `permissions` or this, not both). */
      readonly permissionMode?: PermissionPolicy["default"] | undefined
      readonly permissions?: undefined
    }
  )

/**
 * The options of every agent.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CommonOptions {
  readonly name: string
  readonly description?: string | undefined
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<ToolLike> | undefined
  readonly connectors?: ReadonlyArray<string> | undefined
  readonly subagents?: ReadonlyArray<Agent> | undefined
  readonly builtins?: AgentSpec.Builtins | undefined
  readonly timeouts?: AgentSpec.CallbackTimeouts | undefined
  /** The most model steps one turn may take (default 25). */
  readonly maxSteps?: number | undefined
}

const specOf = (tool: ToolLike): ToolSpec => (tool instanceof ToolSpec ? tool : tool.spec)
const handlerOf = (tool: ToolLike) => (tool instanceof ToolSpec ? undefined : tool.callbackHandler)

/** Both `permissions` and `permissionMode` (a JavaScript caller, or a cast, can give both). */
const bothPolicies = (options: Options): ReadonlyArray<string> => {
  const loose = options as { readonly permissions?: unknown; readonly permissionMode?: unknown }
  return loose.permissions !== undefined && loose.permissionMode !== undefined
    ? [
      `permissions and permissionMode are both given; give one (permissionMode: "${String(loose.permissionMode)}" ` +
      `is the policy new PermissionPolicy({ default: "${String(loose.permissionMode)}" }))`
    ]
    : []
}

/**
 * Defines an agent. Nothing runs: the definition is checked when a session starts.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Agent => {
  const tools = options.tools ?? []
  const subagents = options.subagents ?? []
  const handlers = [
    ...tools.map(handlerOf),
    ...subagents.map((subagent) => subagent.handler)
  ].filter((handler): handler is CallbackHandler.Service => handler !== undefined)
  const permissions = options.permissions ??
    (options.permissionMode === undefined
      ? undefined
      : new PermissionPolicy({ default: options.permissionMode, rules: [] }))
  return {
    spec: AgentSpec.make({
      name: options.name,
      description: options.description,
      model: options.model,
      instructions: options.instructions,
      tools: tools.map(specOf),
      connectors: options.connectors,
      subagents: subagents.map((subagent) => subagent.spec),
      permissions,
      builtins: options.builtins,
      timeouts: options.timeouts,
      maxSteps: options.maxSteps
    }),
    handler: handlers.length === 0 ? undefined : CallbackHandler.make(...handlers),
    issues: bothPolicies(options)
  }
}

/**
 * Starts a session running the agent.
 *
 * @since 0.1.0
 * @category Accessors
 */
export const startSession = (
  agent: Agent
): Effect.Effect<
  Session.Session,
  AgentInvalid | PolicyInvalid | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  agent.issues.length > 0
    ? Effect.fail(
      new AgentInvalid({ module: "Agent", method: "startSession", agent: agent.spec.name, issues: agent.issues })
    )
    : Effect.flatMap(transportFor("Agent", "startSession"), (transport) => transport.createSession(agent.spec)).pipe(
      Effect.map((info) => Session.make({ id: info.sessionId, handler: agent.handler }))
    )

/**
 * A session of the agent, by id (from this process or another one).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const session = (
  agent: Agent,
  sessionId: string
): Effect.Effect<
  Session.Session,
  InvalidId | SessionNotFound | TransportFailure | LimitExceeded | RuntimeMissing,
  Transport
> =>
  Effect.gen(function*() {
    const id = yield* Ids.sessionId(sessionId)
    const transport = yield* transportFor("Agent", "session")
    yield* transport.getSession(id)
    return Session.make({ id, handler: agent.handler })
  })

/**
 * Starts a session, sends the message and waits for the turn (see `Turn.result`).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const run = <R = never>(
  agent: Agent,
  input: string,
  options?: Turn.ResultOptions<R>
): Effect.Effect<TurnState, AgentInvalid | PolicyInvalid | Turn.ResultError, Transport | R> =>
  // A fresh session and no request id: the send cannot fail with `InvalidId`.
  Effect.flatMap(
    startSession(agent),
    (session) => Effect.flatMap(Session.sendMessage(session, input), (turn) => Turn.result(turn, options))
  ).pipe(Effect.catchTag("InvalidId", Effect.die))
