import type { AgentSpec } from "@parley/core/AgentSpec"
import { AgentSpec as AgentSpecSchema, hasSubagentTools } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import { newSessionId, newTurnId } from "@parley/core/Ids"
import type { AgentInvalid, PolicyInvalid } from "@parley/core/ParleyError"
import { CallbackAlreadyAnswered, CallbackNotOpen, SessionNotFound, TurnNotFound } from "@parley/core/ParleyError"
import type * as Transport from "@parley/core/Transport"
import { SessionInfo, TurnRef } from "@parley/core/Transport"
import { SubagentEnded, SubagentStarted, TurnEnded, TurnStarted } from "@parley/core/TurnEvent"
import { Cancelled, Completed, Failed } from "@parley/core/TurnState"
import type { Final } from "@parley/core/TurnState"
import * as Policy from "@parley/policy/PermissionPolicy"
import * as PolicyWarning from "@parley/policy/PolicyWarning"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Connectors from "../Connectors.js"
import type * as Models from "../Models.js"
import type * as SessionStore from "../SessionStore.js"
import * as AgentLoop from "./agentLoop.js"
import { childSpec, descendants, invalid, resolveTools } from "./agentTools.js"
import * as Callbacks from "./callbacks.js"
import { checkClientToolResult } from "./jsonSchema.js"
import { append, appendToTree } from "./log.js"
import type { RunningTurn, SessionRuntime, Subagents, Tree } from "./state.js"
import * as ToolExecution from "./toolExecution.js"

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

    /** Checks a definition (and its subagents') before anything runs. */
    const validate = (agent: AgentSpec): Effect.Effect<void, AgentInvalid | PolicyInvalid> =>
      Effect.gen(function*() {
        // A round trip through the wire form checks every field, also of values built without validation.
        yield* Schema.encode(AgentSpecSchema)(agent).pipe(
          Effect.flatMap(Schema.decodeUnknown(AgentSpecSchema)),
          Effect.mapError((error) => invalid(agent, [ParseResult.TreeFormatter.formatErrorSync(error)]))
        )
        if (agent.permissions !== undefined) yield* Policy.validate(agent.permissions)
        yield* resolveTools(agent, connectors)
        yield* models.resolve(agent)
        if (agent.permissions !== undefined) {
          const warnings = PolicyWarning.check(agent.permissions, {
            agent: agent.name,
            hasSubagents: hasSubagentTools(agent) && agent.subagents.length > 0
          })
          yield* Effect.forEach(warnings, (warning) => Effect.logWarning(PolicyWarning.message(warning)))
        }
        yield* Effect.forEach(agent.subagents, (child) => validate(childSpec(agent, child)), { discard: true })
      })

    const register = (stored: SessionStore.StoredSession, tree: Tree | undefined) =>
      Effect.gen(function*() {
        yield* store.createSession(stored)
        const session: SessionRuntime = {
          session: stored,
          lock: yield* Effect.makeSemaphore(1),
          turnLock: yield* Effect.makeSemaphore(1),
          nextSeq: 0,
          connected: new Set(),
          tree: tree ??
            { root: undefined as unknown as SessionRuntime, currentTurnId: undefined, active: 0, open: new Map() },
          turns: [],
          children: [],
          last: undefined
        }
        if (tree === undefined) session.tree.root = session
        sessions.set(stored.sessionId, session)
        return session
      })

    const createSession = (agent: AgentSpec) =>
      Effect.gen(function*() {
        yield* validate(agent)
        const stored: SessionStore.StoredSession = {
          sessionId: yield* newSessionId,
          agent,
          parent: undefined,
          createdAt: yield* DateTime.now
        }
        return info(yield* register(stored, undefined))
      })

    const endTurn = (session: SessionRuntime, running: RunningTurn, state: Final) =>
      Effect.gen(function*() {
        if (yield* Deferred.isDone(running.done)) return
        const tree = session.tree
        yield* Callbacks.resolveAll(broker, [session], {
          _tag: state._tag === "Cancelled" ? "cancelled" : "turn_ended"
        })
        if (state._tag === "Cancelled") yield* ToolExecution.closeUnfinished(store, session, running.turnId)
        yield* append(store, session, [
          (meta) => new TurnEnded({ sessionId: session.session.sessionId, turnId: running.turnId, ...meta, state })
        ])
        const link = session.session.parent
        const parent = link === undefined ? undefined : sessions.get(link.sessionId)
        if (link !== undefined && parent !== undefined) {
          // Filed under the parent's running turn, or the one that spawned it when the parent is idle.
          yield* appendToTree(
            store,
            parent,
            parent.turns[0]?.turnId ?? link.turnId,
            (ids) => (meta) =>
              new SubagentEnded({
                ...ids,
                ...meta,
                childSessionId: session.session.sessionId,
                childTurnId: running.turnId,
                state
              })
          )
        }
        if (session === tree.root && tree.currentTurnId === running.turnId) tree.currentTurnId = undefined
        const index = session.turns.indexOf(running)
        if (index >= 0) session.turns.splice(index, 1)
        session.last = state
        running.onEnd.forEach((listener) => listener())
        yield* Deferred.succeed(running.done, state)
      }).pipe(Effect.uninterruptible)

    const subagents: Subagents = {
      spawn: (parent, parentTurnId, name, task) =>
        Effect.gen(function*() {
          const declared = parent.session.agent.subagents.find((subagent) => subagent.name === name)
          if (declared === undefined) {
            const known = parent.session.agent.subagents.map((subagent) => subagent.name).join(", ")
            return yield* Effect.fail(`There is no subagent named ${name} (declared: ${known}).`)
          }
          const child = yield* register({
            sessionId: yield* newSessionId,
            agent: childSpec(parent.session.agent, declared),
            parent: { sessionId: parent.session.sessionId, turnId: parentTurnId },
            createdAt: yield* DateTime.now
          }, parent.tree)
          parent.children.push(child)
          const running = yield* startTurn(child, task, true, (childTurnId) =>
            appendToTree(store, parent, parentTurnId, (ids) => (meta) =>
              new SubagentStarted({
                ...ids,
                ...meta,
                childSessionId: child.session.sessionId,
                childTurnId,
                agent: name,
                task
              })))
          return { sessionId: child.session.sessionId, turnId: running.turnId, agent: name, status: "started" }
        }),
      message: (parent, sessionId, message) =>
        Effect.gen(function*() {
          const child = yield* childOf(parent, sessionId)
          const running = yield* startTurn(child, message, child.turns.length === 0, () => Effect.void)
          return { sessionId, turnId: running.turnId, status: "message sent" }
        }),
      wait: (parent, sessionIds) =>
        Effect.gen(function*() {
          const targets = sessionIds === undefined
            ? parent.children
            : yield* Effect.forEach(sessionIds, (id) => childOf(parent, id))
          const states = yield* Callbacks.waitForTurns(
            broker,
            parent.tree,
            targets.map((child) => ({ turn: child.turns[child.turns.length - 1], last: child.last }))
          )
          return targets.map((child, i) => {
            const state = states[i]
            return {
              sessionId: child.session.sessionId,
              agent: child.session.agent.name,
              state: state?._tag ?? "NotStarted",
              ...(state?._tag === "Completed" ? { text: state.text } : {}),
              ...(state?._tag === "Failed" ? { error: state.error.message } : {})
            }
          })
        }),
      interrupt: (parent, sessionId) =>
        Effect.gen(function*() {
          const child = yield* childOf(parent, sessionId)
          yield* cancelTree(child)
          return { sessionId, status: "interrupted" }
        })
    }

    const childOf = (parent: SessionRuntime, sessionId: string) =>
      Effect.suspend(() => {
        const child = parent.children.find((candidate) => candidate.session.sessionId === sessionId)
        return child === undefined
          ? Effect.fail(`There is no subagent session ${sessionId} started by this agent.`)
          : Effect.succeed(child)
      })

    const runTurn = (session: SessionRuntime, running: RunningTurn, input: string, counted: boolean) => {
      const tree = session.tree
      const sessionId = session.session.sessionId
      const turnId = running.turnId
      const body = Effect.gen(function*() {
        if (session === tree.root) tree.currentTurnId = turnId
        yield* append(store, session, [(meta) => new TurnStarted({ sessionId, turnId, ...meta, input })])
        if (session === tree.root) yield* Callbacks.adopt(broker, tree, turnId)
        const outcome = yield* Effect.gen(function*() {
          const model = yield* models.resolve(session.session.agent)
          const tools = yield* resolveTools(session.session.agent, connectors)
          return yield* AgentLoop.run(broker, { session, turnId, tree, model, tools, subagents })
        }).pipe(Effect.either)
        const state: Final = outcome._tag === "Right"
          ? new Completed({ sessionId, turnId, text: outcome.right })
          : new Failed({ sessionId, turnId, error: outcome.left })
        yield* endTurn(session, running, state)
      })
      const counting = counted
        ? Effect.ensuring(body, Callbacks.becameIdle(broker, tree))
        : Callbacks.working(broker, tree, body)
      return session.turnLock.withPermits(1)(counting)
    }

    /** Queues a turn of the session. A `counted` turn counts as running in the tree from now on. */
    const startTurn = (
      session: SessionRuntime,
      input: string,
      counted: boolean,
      before: (turnId: TurnId) => Effect.Effect<void>
    ) =>
      Effect.gen(function*() {
        const turnId = yield* newTurnId
        const running: RunningTurn = { turnId, done: yield* Deferred.make<Final>(), fiber: undefined, onEnd: [] }
        session.turns.push(running)
        if (counted) session.tree.active += 1
        yield* before(turnId)
        running.fiber = yield* FiberSet.run(fibers, runTurn(session, running, input, counted))
        return running
      })

    const sendMessage = (sessionId: SessionId, input: string) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(sessionId, "sendMessage")
        const cursor = session.nextSeq
        const running = yield* startTurn(session, input, false, () => Effect.void)
        return new TurnRef({ sessionId, turnId: running.turnId, cursor })
      })

    /** Cancels a session and every subagent under it. */
    const cancelTree = (session: SessionRuntime) =>
      Effect.gen(function*() {
        const all = descendants(session)
        const running = all.flatMap((member) => member.turns.map((turn) => ({ member, turn })))
        // Their callbacks no longer hold the tree: interrupting the waiting fibers must not look like a block.
        for (const [id, pending] of session.tree.open) {
          if (all.includes(pending.session)) session.tree.open.delete(id)
        }
        yield* Effect.forEach(running, ({ turn }) =>
          turn.fiber === undefined ? Effect.void : Fiber.interrupt(turn.fiber), {
          discard: true
        })
        yield* Callbacks.resolveAll(broker, all, { _tag: "cancelled" })
        yield* Effect.forEach(running, ({ member, turn }) =>
          endTurn(member, turn, new Cancelled({ sessionId: member.session.sessionId, turnId: turn.turnId })), {
          discard: true
        })
      })

    const findTurn = (session: SessionRuntime, turnId: TurnId, method: string) =>
      store.read(session.session.sessionId, 0).pipe(
        Effect.flatMap((events) => {
          const started = events.find((event) =>
            event._tag === "TurnStarted" && event.turnId === turnId
          )
          return started === undefined
            ? Effect.fail(new TurnNotFound({ module: "Engine", method, sessionId: session.session.sessionId, turnId }))
            : Effect.succeed(started)
        })
      )

    const openCallbacks = (sessionId: SessionId, turnId: TurnId) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(sessionId, "openCallbacks")
        yield* findTurn(session, turnId, "openCallbacks")
        const tree = session.tree
        // A root turn lists its whole tree (subagents outlive turns); a subagent's turn lists its own.
        const pending = [...tree.open.values()].filter((p) =>
          session === tree.root
            ? p.session !== session || p.callback.turnId === turnId
            : p.session === session && p.callback.turnId === turnId
        )
        return pending.map((p) =>
          p.callback
        )
      })

    const answer = (request: Transport.AnswerRequest) =>
      Effect.gen(function*() {
        const session = yield* sessionOf(request.sessionId, "answer")
        yield* findTurn(session, request.turnId, "answer")
        const pending = broker.pending.get(request.callbackId)
        const notOpen = (description: string) =>
          new CallbackNotOpen({ module: "Turn", method: "answer", callbackId: request.callbackId, description })
        const alreadyAnswered = new CallbackAlreadyAnswered({
          module: "Turn",
          method: "answer",
          callbackId: request.callbackId
        })
        if (pending === undefined) {
          const closed = broker.closed.get(request.callbackId)
          if (closed === "answered") {
            return yield* alreadyAnswered
          }
          return yield* notOpen(closed === undefined ? "no such callback" : `it was resolved ${closed}`)
        }
        if (pending.tree.root !== session && pending.session !== session) {
          return yield* notOpen(`it belongs to another session's tree`)
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
          return yield* alreadyAnswered
        }
      })

    const service: Transport.Service = {
      createSession,
      getSession: (sessionId) =>
        Effect.map(sessionOf(sessionId, "getSession"), info),
      getTurn: (sessionId, turnId) =>
        sessionOf(sessionId, "getTurn").pipe(
          Effect.flatMap((session) =>
            findTurn(session, turnId, "getTurn")
          ),
          Effect.map((started) => new TurnRef({ sessionId, turnId, cursor: started.seq }))
        ),
      sendMessage,
      events: (sessionId, from) =>
        Stream.unwrap(Effect.map(sessionOf(sessionId, "events"), () => store.tail(sessionId, from))),
      openCallbacks,
      answer,
      cancel: (sessionId) => Effect.flatMap(sessionOf(sessionId, "cancel"), cancelTree)
    }
    return service
  })
