import type { AgentSpec } from "@parley/core/AgentSpec"
import { hasSubagentTools } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import { newSessionId, newTurnId } from "@parley/core/Ids"
import {
  AgentInvalid,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  SessionNotFound,
  TurnNotFound
} from "@parley/core/ParleyError"
import type { ParleyError } from "@parley/core/ParleyError"
import type * as Transport from "@parley/core/Transport"
import { SessionInfo, TurnRef } from "@parley/core/Transport"
import { TurnEnded, TurnStarted } from "@parley/core/TurnEvent"
import { Cancelled, Completed, Failed } from "@parley/core/TurnState"
import type { Final } from "@parley/core/TurnState"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as PolicyWarning from "@parley/policy/PolicyWarning"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Connectors from "../Connectors.js"
import type * as Models from "../Models.js"
import type * as SessionStore from "../SessionStore.js"
import * as AgentLoop from "./agentLoop.js"
import * as Callbacks from "./callbacks.js"
import { checkClientToolResult } from "./jsonSchema.js"
import { append } from "./log.js"
import type { ResolvedTool, RunningTurn, SessionRuntime, Tree } from "./state.js"

const invalid = (agent: AgentSpec, issues: ReadonlyArray<string>) =>
  new AgentInvalid({ module: "Engine", method: "createSession", agent: agent.name, issues })

/** The tools the model sees for an agent, by the name it calls them. */
const resolveTools = (
  agent: AgentSpec,
  connectors: Connectors.Service
): Effect.Effect<ReadonlyMap<string, ResolvedTool>, AgentInvalid> => {
  const tools = new Map<string, ResolvedTool>()
  const issues: Array<string> = []
  for (const spec of agent.tools) {
    if (tools.has(spec.name)) issues.push(`two tools are named ${spec.name}`)
    tools.set(spec.name, { _tag: "client", spec })
  }
  for (const source of agent.connectors) {
    const connector = connectors.get(source)
    if (Option.isNone(connector)) {
      issues.push(`no connector named ${source}`)
      continue
    }
    for (const tool of connector.value.tools) {
      const name = `${source}_${tool.spec.name}`
      if (tools.has(name)) issues.push(`two tools are named ${name}`)
      tools.set(name, { _tag: "connector", spec: tool.spec, connector: connector.value, run: tool.run })
    }
  }
  return issues.length > 0 ? Effect.fail(invalid(agent, issues)) : Effect.succeed(tools)
}

export const make = (
  store: SessionStore.Service,
  models: Models.Service,
  connectors: Connectors.Service
): Effect.Effect<Transport.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = yield* FiberSet.make<void>()
    const broker = Callbacks.makeBroker(store)
    const sessions = new Map<SessionId, SessionRuntime>()

    const sessionOf = (sessionId: SessionId, method: string) =>
      Effect.suspend(() => {
        const session = sessions.get(sessionId)
        return session === undefined
          ? Effect.fail(new SessionNotFound({ module: "Engine", method, sessionId }))
          : Effect.succeed(session)
      })

    const info = (session: SessionRuntime) =>
      new SessionInfo({
        sessionId: session.session.sessionId,
        agent: session.session.agent.name,
        parentSessionId: session.session.parent?.sessionId,
        createdAt: session.session.createdAt
      })

    const createSession = (agent: AgentSpec) =>
      Effect.gen(function*() {
        if (agent.permissions !== undefined) yield* Policy.validate(agent.permissions)
        yield* resolveTools(agent, connectors)
        yield* models.resolve(agent)
        if (agent.permissions !== undefined) {
          const warnings = PolicyWarning.check(agent.permissions, {
            agent: agent.name,
            hasSubagents: hasSubagentTools(agent)
          })
          yield* Effect.forEach(warnings, (warning) => Effect.logWarning(PolicyWarning.message(warning)))
        }
        const sessionId = yield* newSessionId
        const createdAt = yield* DateTime.now
        const stored: SessionStore.StoredSession = { sessionId, agent, parent: undefined, createdAt }
        yield* store.createSession(stored)
        const session: SessionRuntime = {
          session: stored,
          lock: yield* Effect.makeSemaphore(1),
          turnLock: yield* Effect.makeSemaphore(1),
          nextSeq: 0,
          connected: new Set(),
          current: undefined
        }
        sessions.set(sessionId, session)
        return info(session)
      })

    const endTurn = (session: SessionRuntime, turnId: TurnId, tree: Tree, state: Final) =>
      Effect.gen(function*() {
        yield* Callbacks.resolveAll(broker, tree, { _tag: state._tag === "Cancelled" ? "cancelled" : "turn_ended" })
        yield* append(store, session, [
          (meta) => new TurnEnded({ sessionId: session.session.sessionId, turnId, ...meta, state })
        ])
        session.current = undefined
      })

    const runTurn = (session: SessionRuntime, turnId: TurnId, input: string, running: RunningTurn) =>
      Effect.gen(function*() {
        const sessionId = session.session.sessionId
        session.current = running
        yield* append(store, session, [(meta) => new TurnStarted({ sessionId, turnId, ...meta, input })])
        const outcome = yield* Effect.gen(function*() {
          const model = yield* models.resolve(session.session.agent)
          const tools = yield* resolveTools(session.session.agent, connectors)
          return yield* AgentLoop.run(broker, { session, turnId, tree: running.tree, model, tools })
        }).pipe(Effect.either)
        const state: Final = outcome._tag === "Right"
          ? new Completed({ sessionId, turnId, text: outcome.right })
          : new Failed({ sessionId, turnId, error: outcome.left as ParleyError })
        yield* endTurn(session, turnId, running.tree, state)
      }).pipe(session.turnLock.withPermits(1))

    const sendMessage = (sessionId: SessionId, input: string) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(sessionId, "sendMessage")
        const turnId = yield* newTurnId
        const cursor = session.nextSeq
        const tree: Tree = { root: session, rootTurnId: turnId, active: 1, open: new Map() }
        const running: RunningTurn = { turnId, tree, fiber: undefined }
        running.fiber = yield* FiberSet.run(fibers, runTurn(session, turnId, input, running))
        return new TurnRef({ sessionId, turnId, cursor })
      })

    const findTurn = (session: SessionRuntime, turnId: TurnId, method: string) =>
      store.read(session.session.sessionId, 0).pipe(
        Effect.flatMap((events) => {
          const started = events.find((event) => event._tag === "TurnStarted" && event.turnId === turnId)
          return started === undefined
            ? Effect.fail(new TurnNotFound({ module: "Engine", method, sessionId: session.session.sessionId, turnId }))
            : Effect.succeed(started)
        })
      )

    const openCallbacks = (sessionId: SessionId, turnId: TurnId) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(sessionId, "openCallbacks")
        yield* findTurn(session, turnId, "openCallbacks")
        const tree = session.current?.turnId === turnId ? session.current.tree : undefined
        return tree === undefined ? [] : [...tree.open.values()].map((pending) => pending.callback)
      })

    const answer = (request: Transport.AnswerRequest) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(request.sessionId, "answer")
        yield* findTurn(session, request.turnId, "answer")
        const pending = broker.pending.get(request.callbackId)
        const notOpen = (description: string) =>
          new CallbackNotOpen({ module: "Turn", method: "answer", callbackId: request.callbackId, description })
        if (pending === undefined) {
          const closed = broker.closed.get(request.callbackId)
          if (closed === "answered") {
            return yield* new CallbackAlreadyAnswered({
              module: "Turn",
              method: "answer",
              callbackId: request.callbackId
            })
          }
          return yield* notOpen(closed === undefined ? "no such callback" : `it was resolved ${closed}`)
        }
        if (pending.tree.root !== session || pending.tree.rootTurnId !== request.turnId) {
          return yield* notOpen(`it belongs to turn ${pending.tree.rootTurnId} of another tree`)
        }
        yield* Answer.validate(pending.callback, request.answer)
        if (request.answer._tag === "ClientToolResult") {
          yield* checkClientToolResult(pending.callback.id, pending.success, request.answer)
        }
        const won = yield* Callbacks.resolve(broker, request.callbackId as CallbackId, {
          _tag: "answered",
          answer: request.answer
        })
        if (!won) {
          return yield* new CallbackAlreadyAnswered({
            module: "Turn",
            method: "answer",
            callbackId: request.callbackId
          })
        }
      })

    const cancel = (sessionId: SessionId) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(sessionId, "cancel")
        const running = session.current
        if (running === undefined) return
        if (running.fiber !== undefined) yield* Fiber.interrupt(running.fiber)
        if (session.current === running) {
          yield* endTurn(session, running.turnId, running.tree, new Cancelled({ sessionId, turnId: running.turnId }))
        }
      })

    const service: Transport.Service = {
      createSession,
      getSession: (sessionId) => Effect.map(sessionOf(sessionId, "getSession"), info),
      getTurn: (sessionId, turnId) =>
        sessionOf(sessionId, "getTurn").pipe(
          Effect.flatMap((session) => findTurn(session, turnId, "getTurn")),
          Effect.map((started) => new TurnRef({ sessionId, turnId, cursor: started.seq }))
        ),
      sendMessage,
      events: (sessionId, from) =>
        Stream.unwrap(Effect.map(sessionOf(sessionId, "events"), () => store.tail(sessionId, from))),
      openCallbacks,
      answer,
      cancel
    }
    return service
  })
