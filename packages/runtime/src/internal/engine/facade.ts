/**
 * The engine as a `Transport`: every entry point decodes what crosses the port first (a malformed request is a typed
 * error, never a defect), reaches its tree with `withTree`, and turns what the engine refuses into the port's errors.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import { Answer as AnswerSchema } from "@parley/core/Answer"
import { Kind as CallbackKind } from "@parley/core/Callback"
import type { CallbackId, TurnId } from "@parley/core/Ids"
import * as Ids from "@parley/core/Ids"
import { CallbackId as CallbackIdSchema, newSessionId, SessionId, TurnId as TurnIdSchema } from "@parley/core/Ids"
import type { SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import { AnswerMismatch, CallbackNotOpen, TurnNotFound } from "@parley/core/ParleyError"
import { Client, Principal } from "@parley/core/Principal"
import type * as Transport from "@parley/core/Transport"
import { OpenCallback, SessionInfo, TurnRef, TurnSnapshot } from "@parley/core/Transport"
import * as TreeState from "@parley/log/TreeState"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Rejection, Reply } from "../decide.js"
import type * as SignIn from "../signIn.js"
import * as Telemetry from "../telemetry.js"
import { noValidation } from "../tx.js"
import type * as Validation from "../validation.js"
import type { Actor, Core } from "./core.js"
import { failure } from "./core.js"

const decodeSessionId = Schema.decodeUnknownResult(SessionId)
const decodeTurnId = Schema.decodeUnknownResult(TurnIdSchema)
const decodeCallbackId = Schema.decodeUnknownResult(CallbackIdSchema)
const decodeAnswer = Schema.decodeUnknownResult(AnswerSchema)
const decodePrincipal = Schema.decodeUnknownResult(Principal)
/** A request that does not say who answers was sent by a program, by id: an unlabelled `Client`. */
const anonymous = new Client({})
const decodeKind = Schema.decodeUnknownResult(CallbackKind)

export const make = (
  core: Core,
  definitions: {
    /** Refuses an agent the runtime cannot run. */
    readonly validate: ReturnType<typeof Validation.make>
    /** The definition a session stores: the tools this runtime runs marked. */
    readonly marked: (agent: AgentSpec) => AgentSpec
    /** Completes the sign-ins an answer carries credentials for (`signIn.ts`). */
    readonly completeSignIn: ReturnType<typeof SignIn.make>
  }
): Transport.Unlimited => {
  const { owner, runsWork, store } = core
  const { marked, validate } = definitions
  const options = definitions

  /**
   * The session's events from `from` on in a queue (its tree's, for a root session), the store's errors turned into
   * the transport's: a fiber of the caller's scope moves each batch on.
   */
  /**
   * Queues a turn. Under a tracer, its span starts here (a child of the caller's span) and its context is recorded on
   * the `TurnQueued`, which takes the span over when it is committed; a turn that is refused ends its span at once. A
   * caller interrupted meanwhile leaves it to the `TurnQueued`, if the command still lands, else to the tree's close.
   * A repeated request id the tree already has starts no span: no turn is queued.
   */
  const send = (actor: Actor, sessionId: SessionId, input: string, requestId: string | undefined) =>
    Effect.withFiber<Reply, Rejection | TransportFailure>((fiber) => {
      if (actor.traced === undefined) actor.traced = Telemetry.tracing(fiber)
      const traced = actor.traced
      const repeated = requestId !== undefined && TreeState.requested(actor.state, sessionId, requestId) !== undefined
      if (traced === undefined || repeated) {
        return core.submit(actor, { _tag: "SendMessage", sessionId, input, requestId })
      }
      const agent = TreeState.session(actor.state, sessionId)?.agent.name ?? ""
      const span = Telemetry.startTurn(traced, fiber, { session: sessionId, agent })
      return Effect.tapCause(
        core.submit(actor, { _tag: "SendMessage", sessionId, input, requestId, trace: Telemetry.contextOf(span) }),
        (cause) =>
          Effect.sync(() => {
            if (traced.pending.delete(span.spanId)) span.end(Telemetry.now(traced), Exit.failCause(cause))
          })
      )
    })

  const subscribe = (method: string, sessionId: unknown, from: number) =>
    Effect.gen(function*() {
      const { id, treeId } = yield* core.withTree(
        method,
        sessionId,
        (actor, id) => Effect.succeed({ id, treeId: actor.treeId }),
        { read: true }
      )
      const cursor = Number.isSafeInteger(from) && from > 0 ? from : 0
      const only = id === treeId ? undefined : id
      const stored = yield* Effect.mapError(
        store.eventLog.subscribe(treeId, cursor, only),
        (error) => failure(method, error)
      )
      // The stored events, with the live deltas of this process's model steps merged in.
      return yield* core.live.follow(
        treeId,
        cursor,
        only,
        stored,
        (error): SessionNotFound | TransportFailure => failure(method, error)
      )
    })

  const createSession = (given: AgentSpec) =>
    Effect.gen(function*() {
      yield* validate(given)
      const agent = marked(given)
      const treeId = yield* newSessionId
      const createdAt = yield* DateTime.now
      yield* Effect.mapError(
        store.eventLog.createTree({ treeId, agent, createdAt }),
        (error) => failure("createSession", error)
      )
      // The engine that creates a session owns its tree (unless it runs no work, or is placed: then the engine the
      // tree is placed on claims it with its first command): another process that reads it first only follows it.
      const lease = runsWork && core.placed === undefined
        ? Option.getOrUndefined(
          yield* Effect.mapError(store.leases.claim(treeId, owner), (error) => failure("createSession", error))
        )
        : undefined
      // Its actor is made at once from the state of an empty log: the first message reads nothing from the store.
      yield* core.actors.insert(
        treeId,
        (scope) =>
          core.install(
            treeId,
            scope,
            { state: TreeState.empty({ treeId, agent, createdAt }), seq: 0 },
            lease,
            undefined
          )
      )
      return new SessionInfo({ sessionId: treeId, agent: agent.name, createdAt, cursor: 0 }, noValidation)
    })

  const service: Transport.Unlimited = {
    createSession,
    getSession: (sessionId) =>
      core.withTree("getSession", sessionId, (actor, id) => {
        const session = TreeState.session(actor.state, id)
        return session === undefined
          ? Effect.fail(core.sessionNotFound("getSession", sessionId))
          : Effect.succeed(
            new SessionInfo({
              sessionId: id,
              agent: session.agent.name,
              parentSessionId: session.parent?.sessionId,
              createdAt: session.createdAt,
              cursor: actor.state.nextSeq
            }, noValidation)
          )
      }, { read: true }),
    getTurn: (sessionId, turnId) =>
      core.withTree("getTurn", sessionId, (actor, id) =>
        Effect.map(
          core.knownTurn(actor, id, turnId, "getTurn"),
          (turn) => new TurnRef({ sessionId: id, turnId: turn.turnId, cursor: turn.cursor }, noValidation)
        ), { read: true }),
    sendMessage: (sessionId, input, options) =>
      // Checked before anything is decided: a malformed request id queues nothing.
      Effect.flatMap(
        options?.requestId === undefined ? Effect.succeed(undefined) : Ids.requestId(options.requestId),
        (requestId) =>
          core.withTree("sendMessage", sessionId, (actor, id) =>
            Effect.flatMap(
              send(actor, id, String(input), requestId),
              (reply) =>
                reply === undefined ? Effect.fail(failure("sendMessage", "no turn was queued")) : Effect.succeed(reply)
            ).pipe(
              Effect.catchTags({
                AnswerMismatch: (error) => Effect.fail(failure("sendMessage", error)),
                CallbackNotOpen: (error) => Effect.fail(failure("sendMessage", error)),
                CallbackAlreadyAnswered: (error) => Effect.fail(failure("sendMessage", error)),
                NotAllowedToAnswer: (error) => Effect.fail(failure("sendMessage", error)),
                GrantNotFound: (error) => Effect.fail(failure("sendMessage", error)),
                TurnNotFound: (error) => Effect.fail(failure("sendMessage", error))
              })
            ))
      ),
    subscribe: (sessionId, from) => subscribe("subscribe", sessionId, from),
    events: (sessionId, from) =>
      Stream.unwrap(Effect.map(subscribe("events", sessionId, from), (events) => Stream.fromQueue(events))),
    snapshot: (sessionId, turnId) =>
      core.withTree("snapshot", sessionId, (actor, id) =>
        Effect.andThen(
          core.caughtUp(actor, "snapshot"),
          core.knownTurn(actor, id, turnId, "snapshot")
        ).pipe(Effect.map((turn) => {
          const state = actor.state
          return new TurnSnapshot({
            turn: new TurnRef({ sessionId: id, turnId: turn.turnId, cursor: turn.cursor }, noValidation),
            callbacks: TreeState.openCallbacks(state, turn.turnId),
            cursor: state.nextSeq,
            started: turn.startedSeq,
            state: TreeState.turnState(state, turn.turnId)
          }, noValidation)
        })), { read: true }),
    answer: (request) =>
      Effect.gen(function*() {
        // Everything that crosses the port is decoded first: a malformed request is a typed error, never a defect.
        const fields = (typeof request === "object" && request !== null ? request : {}) as Partial<
          Transport.AnswerRequest
        >
        const turnId = decodeTurnId(fields.turnId)
        const callbackId = decodeCallbackId(fields.callbackId)
        const answer = decodeAnswer(fields.answer)
        const answeredBy = fields.answeredBy === undefined
          ? Result.succeed(anonymous)
          : decodePrincipal(fields.answeredBy)
        const requestId = fields.requestId === undefined ? undefined : yield* Ids.requestId(fields.requestId)
        return yield* core.withTree("answer", fields.sessionId, (actor, sessionId) =>
          Effect.gen(function*() {
            if (Result.isFailure(turnId)) {
              return yield* new TurnNotFound({
                module: "Turn",
                method: "answer",
                sessionId,
                turnId: String(fields.turnId)
              })
            }
            if (Result.isFailure(callbackId)) {
              return yield* new CallbackNotOpen({
                module: "Turn",
                method: "answer",
                callbackId: String(fields.callbackId),
                description: "not a callback id"
              })
            }
            if (Result.isFailure(answer)) {
              return yield* new AnswerMismatch({
                module: "Turn",
                method: "answer",
                callbackId: callbackId.success,
                reason: `the answer does not decode: ${answer.failure.message}`
              })
            }
            if (Result.isFailure(answeredBy)) {
              return yield* new AnswerMismatch({
                module: "Turn",
                method: "answer",
                callbackId: callbackId.success,
                reason: `answeredBy does not decode: ${answeredBy.failure.message}`
              })
            }
            const id = callbackId.success as CallbackId
            yield* core.afterCatchingUp(
              actor,
              // A sign-in's credentials are exchanged and kept first: the answer stored names the requests only.
              Effect.suspend(() => options.completeSignIn(actor.treeId, actor.state, id, answer.success)).pipe(
                Effect.flatMap((stored) =>
                  core.submit(actor, {
                    _tag: "Answer",
                    sessionId,
                    turnId: turnId.success as TurnId,
                    callbackId: id,
                    answer: stored,
                    answeredBy: answeredBy.success,
                    requestId
                  })
                ),
                Effect.catchTag("GrantNotFound", (error) => Effect.fail(failure("answer", error)))
              ),
              (error) =>
                error._tag === "TurnNotFound" ||
                (error._tag === "CallbackNotOpen" && TreeState.callback(actor.state, id) === undefined)
            )
          }))
      }),
    listOpen: (filter) =>
      Effect.gen(function*() {
        // The filter crosses the port too: decoded first, a malformed one is a typed error.
        const fields = (typeof filter === "object" && filter !== null ? filter : {}) as Transport.ListOpenFilter
        const sessionId = fields.sessionId === undefined ? undefined : decodeSessionId(fields.sessionId)
        const kind = fields.kind === undefined ? undefined : decodeKind(fields.kind)
        if (sessionId !== undefined && Result.isFailure(sessionId)) {
          return yield* failure("listOpen", `not a session id: ${String(fields.sessionId)}`)
        }
        if (kind !== undefined && Result.isFailure(kind)) {
          return yield* failure("listOpen", `not a kind of callback: ${String(fields.kind)}`)
        }
        const rows = yield* Effect.mapError(
          store.eventLog.listOpen({ sessionId: sessionId?.success, kind: kind?.success }),
          (error) => failure("listOpen", error)
        )
        const byTree = new Map<SessionId, Array<CallbackId>>()
        for (const row of rows) {
          const ids = byTree.get(row.treeId) ?? []
          ids.push(row.callbackId)
          byTree.set(row.treeId, ids)
        }
        // The tree's state is the truth: a callback resolved since the store's listing is left out. When the store
        // lists one the state does not know yet (the store is ahead of a tree this process follows), the events
        // after the state are read and folded here, without going through the tree's actor.
        const openOf = (state: TreeState.TreeState, ids: ReadonlyArray<CallbackId>) =>
          ids.flatMap((id) => {
            const record = TreeState.callback(state, id)
            if (record === undefined || record.resolution !== undefined) return []
            const callback = record.callback
            return [
              new OpenCallback({ callback, answerSchema: TreeState.answerSchema(state, callback) }, noValidation)
            ]
          })
        const current = (actor: Actor, ids: ReadonlyArray<CallbackId>) => {
          const state = actor.state
          if (ids.every((id) => TreeState.callback(state, id) !== undefined)) return Effect.succeed(state)
          return Effect.map(
            store.eventLog.read(actor.treeId, state.nextSeq),
            (events) => events.length === 0 ? state : TreeState.foldFrom(state, events)
          )
        }
        const found = yield* Effect.forEach(byTree, ([treeId, ids]) =>
          core.withTree(
            "listOpen",
            treeId,
            (actor) =>
              Effect.map(
                Effect.mapError(current(actor, ids), (error) => failure("listOpen", error)),
                (state) => openOf(state, ids)
              ),
            { read: true }
          ).pipe(Effect.catchTag("SessionNotFound", () => Effect.succeed([]))), { concurrency: 16 })
        return found.flat()
      }),
    grants: (sessionId) =>
      core.withTree(
        "grants",
        sessionId,
        (actor, id) =>
          Effect.map(core.caughtUp(actor, "grants"), () =>
            // A root session lists its whole tree's grants; a subagent its own and the tree's.
            actor.state.grants.filter((grant) =>
              id === actor.treeId || grant.scope === "tree" || grant.sessionId === id
            )),
        { read: true }
      ),
    revokeGrant: (request) =>
      core.withTree("revokeGrant", request.sessionId, (actor, id) =>
        core.afterCatchingUp(
          actor,
          core.submit(actor, {
            _tag: "RevokeGrant",
            sessionId: id,
            grantId: String(request.grantId),
            revokedBy: request.revokedBy ?? anonymous
          }),
          (error) => error._tag === "GrantNotFound"
        ).pipe(
          Effect.asVoid,
          Effect.catchTags({
            AnswerMismatch: (error) => Effect.fail(failure("revokeGrant", error)),
            CallbackNotOpen: (error) => Effect.fail(failure("revokeGrant", error)),
            CallbackAlreadyAnswered: (error) => Effect.fail(failure("revokeGrant", error)),
            NotAllowedToAnswer: (error) => Effect.fail(failure("revokeGrant", error)),
            TurnNotFound: (error) => Effect.fail(failure("revokeGrant", error))
          })
        )),
    cancel: (sessionId) =>
      core.withTree("cancel", sessionId, (actor, id) =>
        core.submit(actor, { _tag: "Cancel", sessionId: id }).pipe(
          Effect.asVoid,
          Effect.catchTags({
            AnswerMismatch: (error) => Effect.fail(failure("cancel", error)),
            CallbackNotOpen: (error) => Effect.fail(failure("cancel", error)),
            CallbackAlreadyAnswered: (error) => Effect.fail(failure("cancel", error)),
            NotAllowedToAnswer: (error) => Effect.fail(failure("cancel", error)),
            GrantNotFound: (error) => Effect.fail(failure("cancel", error)),
            TurnNotFound: (error) => Effect.fail(failure("cancel", error))
          })
        ))
  }
  return service
}
