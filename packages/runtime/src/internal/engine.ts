/**
 * The engine's effectful shell around `decide` (pure) and `next` (the work a state calls for).
 *
 * - One actor per tree: a mailbox of commands drained by one fiber. A batch of commands is decided against the
 *   state, its events appended in one `append`, then the state is the new one, the replies go out, and the work the
 *   state calls for (model steps, tools of the runtime) is started or stopped on a `FiberMap`. Work reports back as
 *   commands. A lost append race re-reads the log and decides again.
 * - Eviction: actors live in an `RcMap` with an idle time-to-live. An actor keeps itself alive while its state calls
 *   for work; a tree whose turns all wait on callbacks holds nothing after the time-to-live, and is rebuilt from its
 *   log when an answer, a deadline or a reader's query arrives.
 * - Deadlines: one ordered structure and one timer fiber for the process (`deadlines.ts`).
 * - The store's `changes` wake the tree an append by someone else (another process) touched.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type { AgentSpec } from "@parley/core/AgentSpec"
import { Answer as AnswerSchema } from "@parley/core/Answer"
import type { CallbackId, TurnId } from "@parley/core/Ids"
import { CallbackId as CallbackIdSchema, newSessionId, SessionId, TurnId as TurnIdSchema } from "@parley/core/Ids"
import {
  AnswerMismatch,
  CallbackNotOpen,
  SessionNotFound,
  TransportFailure,
  TurnNotFound
} from "@parley/core/ParleyError"
import type * as Transport from "@parley/core/Transport"
import { SessionInfo, TurnRef, TurnSnapshot } from "@parley/core/Transport"
import * as TreeState from "@parley/core/TreeState"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as RcMap from "effect/RcMap"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Connectors from "../Connectors.js"
import type * as Models from "../Models.js"
import type * as SessionStore from "../SessionStore.js"
import type { ResolvedTool } from "./agentTools.js"
import { resolveTools } from "./agentTools.js"
import * as Deadlines from "./deadlines.js"
import type { Command, Rejection, Reply } from "./decide.js"
import { decide } from "./decide.js"
import * as Validation from "./validation.js"
import * as Work from "./work.js"

export interface Options {
  /** How long a tree with nothing to do stays in memory after its last use (default: one minute). */
  readonly idleTimeToLive?: Duration.DurationInput | undefined
}

interface Envelope {
  readonly command: Command
  readonly reply: Deferred.Deferred<Either.Either<Reply, Rejection>, TransportFailure> | undefined
}

interface Actor {
  readonly treeId: SessionId
  state: TreeState.TreeState
  readonly mailbox: Queue.Queue<Envelope>
  readonly work: FiberMap.FiberMap<string>
  /** Held while the state calls for work, so the tree is not evicted under it. */
  keepAlive: Scope.CloseableScope | undefined
  /** Work that reported its result, which the state has not taken in yet: it must not start again meanwhile. */
  readonly reported: Set<string>
}

class TreeMissing extends Data.TaggedError("TreeMissing")<{}> {}

const failure = (method: string, error: unknown) =>
  new TransportFailure({
    module: "Engine",
    method,
    description: error instanceof Error ? error.message : String(error),
    cause: error
  })

export const make = (
  store: SessionStore.Service,
  models: Models.Service,
  connectors: Connectors.Service,
  options?: Options
): Effect.Effect<Transport.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    // -------------------------------------------------------------------------
    // Definitions: tools and models, resolved once per agent definition
    // -------------------------------------------------------------------------

    const noTools: ReadonlyMap<string, ResolvedTool> = new Map()
    const toolsCache = new WeakMap<AgentSpec, ReadonlyMap<string, ResolvedTool>>()
    const toolsOf = (agent: AgentSpec) => {
      let tools = toolsCache.get(agent)
      if (tools === undefined) {
        tools = Either.getOrElse(resolveTools(agent, connectors), () => noTools)
        toolsCache.set(agent, tools)
      }
      return tools
    }
    const env = { toolsOf }
    const modelCache = new WeakMap<AgentSpec, LanguageModel.Service>()
    const modelOf = (agent: AgentSpec) =>
      Effect.suspend(() => {
        const cached = modelCache.get(agent)
        if (cached !== undefined) return Effect.succeed(cached)
        return Effect.tap(models.resolve(agent), (model) => Effect.sync(() => modelCache.set(agent, model)))
      })

    const validate = Validation.make(models, connectors)
    const { modelStep, runTool } = Work.make({ store, toolsOf, modelOf })

    // -------------------------------------------------------------------------
    // Actors
    // -------------------------------------------------------------------------

    const loaded = new Map<SessionId, Actor>()

    const offer = (actor: Actor, command: Command) => Queue.offer(actor.mailbox, { command, reply: undefined })

    /** A work item's result: from now until the state takes it in, the work is done, not missing. */
    const report = (actor: Actor, key: string, command: Command) =>
      Effect.suspend(() => {
        actor.reported.add(key)
        return offer(actor, command)
      })

    const workTree = (actor: Actor): Work.Tree => ({
      treeId: actor.treeId,
      state: actor.state,
      report: (key, command) => report(actor, key, command)
    })

    /** The work the state calls for, by key: model steps and tools of the runtime. */
    const next = (actor: Actor) => {
      const work = new Map<string, () => Effect.Effect<void>>()
      for (const turn of TreeState.runningTurns(actor.state)) {
        if (turn.modelPending && turn.step !== undefined) {
          const step = turn.step
          work.set(`model:${step.messageId}`, () => modelStep(workTree(actor), turn, step))
        }
        for (const call of turn.calls) {
          if (call.stage._tag === "Executing") {
            work.set(`tool:${call.toolCallId}`, () => runTool(workTree(actor), turn, call))
          }
        }
      }
      return work
    }

    /** Starts the work the state calls for, stops what it no longer does, and keeps the tree alive meanwhile. */
    const reconcile = (actor: Actor) =>
      Effect.gen(function*() {
        const wanted = next(actor)
        const stale = [...actor.work].flatMap(([key]) => (wanted.has(key) ? [] : [key]))
        for (const key of stale) yield* FiberMap.remove(actor.work, key)
        for (const key of actor.reported) if (!wanted.has(key)) actor.reported.delete(key)
        for (const [key, work] of wanted) {
          if (actor.reported.has(key)) continue
          yield* FiberMap.run(actor.work, key, Effect.suspend(work), { onlyIfMissing: true })
        }
        if (wanted.size > 0 && actor.keepAlive === undefined) {
          const scope = yield* Scope.make()
          actor.keepAlive = scope
          yield* Scope.extend(RcMap.get(actors, actor.treeId), scope).pipe(Effect.ignore)
        } else if (wanted.size === 0 && actor.keepAlive !== undefined) {
          const scope = actor.keepAlive
          actor.keepAlive = undefined
          // Closed from another fiber: releasing the last reference may close this actor's own scope.
          yield* Effect.forkDaemon(Scope.close(scope, Exit.void))
        }
      })

    const afterCommit = (actor: Actor, events: ReadonlyArray<TurnEvent>) =>
      Effect.gen(function*() {
        for (const event of events) {
          if (event._tag === "CallbackOpened" && event.callback.expiresAt !== undefined) {
            yield* deadlines.schedule(actor.treeId, event.callback.id, event.callback.expiresAt.epochMillis)
          } else if (event._tag === "CallbackResolved") {
            deadlines.cancel(event.callbackId)
          }
        }
        yield* reconcile(actor)
      })

    /** Reads what others appended since the actor's state. */
    const refresh = (actor: Actor) =>
      Effect.map(
        store.read(actor.treeId, actor.state.nextSeq),
        (events) => {
          if (events.length > 0) actor.state = TreeState.foldFrom(actor.state, events)
          return events
        }
      )

    const process = (actor: Actor, batch: ReadonlyArray<Envelope>) =>
      Effect.gen(function*() {
        let conflicted = batch.some((envelope) => envelope.command._tag === "Settle")
        for (let attempt = 0; attempt < 5; attempt++) {
          // Events appended by others first: read them, then settle what they call for before the batch.
          const foreign = conflicted ? yield* refresh(actor) : []
          if (foreign.length > 0) yield* afterCommit(actor, foreign)
          const now = yield* DateTime.now
          let state = actor.state
          const events: Array<TurnEvent> = []
          if (foreign.length > 0) {
            const settled = decide(state, { _tag: "Settle" }, now, env)
            state = settled.state
            events.push(...settled.events)
          }
          const replies: Array<Either.Either<Reply, Rejection>> = []
          for (const envelope of batch) {
            const decision = decide(state, envelope.command, now, env)
            state = decision.state
            events.push(...decision.events)
            replies.push(decision.reply)
          }
          const appended = events.length === 0
            ? Either.right(undefined)
            : yield* Effect.either(store.append(actor.treeId, actor.state.nextSeq, events))
          if (Either.isRight(appended)) {
            actor.state = state
            yield* afterCommit(actor, events)
            yield* Effect.forEach(
              batch,
              (envelope, i) =>
                envelope.reply === undefined ? Effect.void : Deferred.succeed(envelope.reply, replies[i]),
              { discard: true }
            )
            return
          }
          if (appended.left._tag === "StoreError") {
            return yield* Effect.forEach(
              batch,
              (envelope) =>
                envelope.reply === undefined
                  ? Effect.void
                  : Deferred.fail(envelope.reply, failure("append", appended.left)),
              { discard: true }
            )
          }
          // Someone else appended first: read what they wrote and decide again.
          conflicted = true
        }
        yield* Effect.forEach(
          batch,
          (envelope) =>
            envelope.reply === undefined
              ? Effect.void
              : Deferred.fail(envelope.reply, failure("append", "the log kept moving under the engine")),
          { discard: true }
        )
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.forEach(
            batch,
            (envelope) =>
              envelope.reply === undefined
                ? Effect.void
                : Deferred.fail(envelope.reply, failure("decide", Cause.squash(cause))),
            { discard: true }
          ).pipe(Effect.zipRight(Effect.logError("the engine could not process commands", cause)))
        )
      )

    const load = (treeId: SessionId): Effect.Effect<Actor, TreeMissing | SessionStore.StoreError, Scope.Scope> =>
      Effect.gen(function*() {
        const header = yield* store.getTree(treeId)
        if (Option.isNone(header)) return yield* new TreeMissing()
        const events = yield* store.read(treeId, 0)
        const actor: Actor = {
          treeId,
          state: TreeState.fold(header.value, events),
          mailbox: yield* Queue.unbounded<Envelope>(),
          work: yield* FiberMap.make<string>(),
          keepAlive: undefined,
          reported: new Set()
        }
        loaded.set(treeId, actor)
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            if (loaded.get(treeId) === actor) loaded.delete(treeId)
          })
        )
        for (const id of actor.state.open) {
          const expiresAt = TreeState.callback(actor.state, id)?.callback.expiresAt
          if (expiresAt !== undefined) yield* deadlines.schedule(treeId, id, expiresAt.epochMillis)
        }
        yield* Effect.gen(function*() {
          while (true) {
            const batch = yield* Queue.takeBetween(actor.mailbox, 1, 256)
            yield* process(actor, Chunk.toReadonlyArray(batch))
          }
        }).pipe(Effect.forkScoped)
        // Whatever was in flight when the tree was last in memory is taken up again.
        yield* offer(actor, { _tag: "Resume" })
        return actor
      })

    // The functions above use `actors` and `deadlines` only once both exist.
    const actors = yield* RcMap.make({ lookup: load, idleTimeToLive: options?.idleTimeToLive ?? "1 minute" })

    // -------------------------------------------------------------------------
    // Entry points
    // -------------------------------------------------------------------------

    const sessionNotFound = (method: string, sessionId: unknown) =>
      new SessionNotFound({ module: "Engine", method, sessionId: String(sessionId) })

    const decodeSessionId = Schema.decodeUnknownEither(SessionId)
    const decodeTurnId = Schema.decodeUnknownEither(TurnIdSchema)
    const decodeCallbackId = Schema.decodeUnknownEither(CallbackIdSchema)
    const decodeAnswer = Schema.decodeUnknownEither(AnswerSchema)

    /** Runs `f` with the actor of the tree `sessionId` belongs to (loading it if needed). */
    const withTree = <A, E>(
      method: string,
      sessionId: unknown,
      f: (actor: Actor, sessionId: SessionId) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | SessionNotFound | TransportFailure> => {
      const id = decodeSessionId(sessionId)
      if (Either.isLeft(id)) return Effect.fail(sessionNotFound(method, sessionId))
      const inTree = (actor: Actor): Effect.Effect<A, E | SessionNotFound> =>
        afterCatchingUp(
          actor,
          Effect.suspend(() =>
            TreeState.session(actor.state, id.right) === undefined
              ? Effect.fail(sessionNotFound(method, sessionId))
              : Effect.void
          ),
          () => true
        ).pipe(Effect.zipRight(Effect.suspend(() => f(actor, id.right))))
      return Effect.mapError(store.treeOf(id.right), (error) => failure(method, error)).pipe(
        Effect.flatMap((treeId) =>
          Option.isNone(treeId) ? Effect.fail(sessionNotFound(method, sessionId)) : Effect.scoped(
            Effect.flatMap(
              Effect.mapError(
                RcMap.get(actors, treeId.value),
                (error) => error._tag === "TreeMissing" ? sessionNotFound(method, sessionId) : failure(method, error)
              ),
              inTree
            )
          )
        )
      )
    }

    /**
     * Runs `f`; when it fails because the actor does not know a session, turn or callback (`unknown`), which another
     * process may have appended since the actor last read the log, the actor reads the log first (`Settle`) and `f`
     * runs once more. An answer by id from another process must not be refused for a copy that lags behind.
     */
    const afterCatchingUp = <A, E>(actor: Actor, f: Effect.Effect<A, E>, unknown: (error: E) => boolean) =>
      Effect.catchIf(f, unknown, () => Effect.zipRight(Effect.ignore(submit(actor, { _tag: "Settle" })), f))

    const submit = (actor: Actor, command: Command) =>
      Effect.gen(function*() {
        const reply = yield* Deferred.make<Either.Either<Reply, Rejection>, TransportFailure>()
        yield* Queue.offer(actor.mailbox, { command, reply })
        const decided = yield* Deferred.await(reply)
        return yield* decided
      })

    const turnOf = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) => {
      const id = decodeTurnId(turnId)
      const turn = Either.isRight(id) ? TreeState.turn(actor.state, id.right) : undefined
      return turn === undefined || turn.sessionId !== sessionId
        ? Effect.fail(new TurnNotFound({ module: "Engine", method, sessionId, turnId: String(turnId) }))
        : Effect.succeed(turn)
    }

    /** `turnOf`, after catching up with the log when the actor does not know the turn. */
    const knownTurn = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) =>
      afterCatchingUp(actor, Effect.suspend(() => turnOf(actor, sessionId, turnId, method)), () => true)

    const deadlines = yield* Deadlines.make((treeId, callbackId) =>
      withTree("expire", treeId, (actor) => submit(actor, { _tag: "Expire", callbackId })).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`the deadline of ${callbackId} could not be applied`, cause))
      )
    )

    // Appends by anyone: a tree in memory reads them; a tree out of memory is loaded, which settles it.
    yield* store.changes.pipe(
      Stream.runForEach(({ nextSeq, treeId }) => {
        const actor = loaded.get(treeId)
        if (actor !== undefined) return actor.state.nextSeq >= nextSeq ? Effect.void : offer(actor, { _tag: "Settle" })
        return Effect.forkDaemon(
          withTree("changes", treeId, (tree) => submit(tree, { _tag: "Settle" })).pipe(Effect.ignore)
        )
      }),
      Effect.catchAllCause((cause) => Effect.logError("the engine stopped following the store's changes", cause)),
      Effect.forkScoped
    )

    const createSession = (agent: AgentSpec) =>
      Effect.gen(function*() {
        yield* validate(agent)
        const treeId = yield* newSessionId
        const createdAt = yield* DateTime.now
        yield* Effect.mapError(
          store.createTree({ treeId, agent, createdAt }),
          (error) => failure("createSession", error)
        )
        return new SessionInfo({ sessionId: treeId, agent: agent.name, createdAt })
      })

    const service: Transport.Service = {
      createSession,
      getSession: (sessionId) =>
        withTree("getSession", sessionId, (actor, id) => {
          const session = TreeState.session(actor.state, id)
          return session === undefined
            ? Effect.fail(sessionNotFound("getSession", sessionId))
            : Effect.succeed(
              new SessionInfo({
                sessionId: id,
                agent: session.agent.name,
                parentSessionId: session.parent?.sessionId,
                createdAt: session.createdAt
              })
            )
        }),
      getTurn: (sessionId, turnId) =>
        withTree("getTurn", sessionId, (actor, id) =>
          Effect.map(
            knownTurn(actor, id, turnId, "getTurn"),
            (turn) => new TurnRef({ sessionId: id, turnId: turn.turnId, cursor: turn.cursor })
          )),
      sendMessage: (sessionId, input) =>
        withTree("sendMessage", sessionId, (actor, id) =>
          Effect.flatMap(
            submit(actor, { _tag: "SendMessage", sessionId: id, input: String(input) }),
            (reply) =>
              reply === undefined ? Effect.fail(failure("sendMessage", "no turn was queued")) : Effect.succeed(reply)
          ).pipe(
            Effect.catchTags({
              AnswerMismatch: (error) => Effect.fail(failure("sendMessage", error)),
              CallbackNotOpen: (error) => Effect.fail(failure("sendMessage", error)),
              CallbackAlreadyAnswered: (error) => Effect.fail(failure("sendMessage", error)),
              TurnNotFound: (error) => Effect.fail(failure("sendMessage", error))
            })
          )),
      events: (sessionId, from) =>
        Stream.unwrap(
          withTree("events", sessionId, (actor, id) => {
            const cursor = Number.isSafeInteger(from) && from > 0 ? from : 0
            const tail = Stream.mapError(store.tail(actor.treeId, cursor), (error) => failure("events", error))
            return Effect.succeed(id === actor.treeId ? tail : Stream.filter(tail, (event) => event.sessionId === id))
          })
        ),
      snapshot: (sessionId, turnId) =>
        withTree("snapshot", sessionId, (actor, id) =>
          Effect.map(knownTurn(actor, id, turnId, "snapshot"), (turn) => {
            const state = actor.state
            return new TurnSnapshot({
              turn: new TurnRef({ sessionId: id, turnId: turn.turnId, cursor: turn.cursor }, true),
              callbacks: TreeState.openCallbacks(state, turn.turnId),
              cursor: state.nextSeq,
              started: turn.startedSeq,
              state: TreeState.turnState(state, turn.turnId)
            }, true)
          })),
      answer: (request) =>
        Effect.gen(function*() {
          // Everything that crosses the port is decoded first: a malformed request is a typed error, never a defect.
          const fields = (typeof request === "object" && request !== null ? request : {}) as Partial<
            Transport.AnswerRequest
          >
          const turnId = decodeTurnId(fields.turnId)
          const callbackId = decodeCallbackId(fields.callbackId)
          const answer = decodeAnswer(fields.answer)
          return yield* withTree("answer", fields.sessionId, (actor, sessionId) =>
            Effect.gen(function*() {
              if (Either.isLeft(turnId)) {
                return yield* new TurnNotFound({
                  module: "Turn",
                  method: "answer",
                  sessionId,
                  turnId: String(fields.turnId)
                })
              }
              if (Either.isLeft(callbackId)) {
                return yield* new CallbackNotOpen({
                  module: "Turn",
                  method: "answer",
                  callbackId: String(fields.callbackId),
                  description: "not a callback id"
                })
              }
              if (Either.isLeft(answer)) {
                return yield* new AnswerMismatch({
                  module: "Turn",
                  method: "answer",
                  callbackId: callbackId.right,
                  reason: `the answer does not decode: ${ParseResult.TreeFormatter.formatErrorSync(answer.left)}`
                })
              }
              const id = callbackId.right as CallbackId
              yield* afterCatchingUp(
                actor,
                submit(actor, {
                  _tag: "Answer",
                  sessionId,
                  turnId: turnId.right as TurnId,
                  callbackId: id,
                  answer: answer.right
                }),
                (error) =>
                  error._tag === "TurnNotFound" ||
                  (error._tag === "CallbackNotOpen" && TreeState.callback(actor.state, id) === undefined)
              )
            }))
        }),
      cancel: (sessionId) =>
        withTree("cancel", sessionId, (actor, id) =>
          submit(actor, { _tag: "Cancel", sessionId: id }).pipe(
            Effect.asVoid,
            Effect.catchTags({
              AnswerMismatch: (error) => Effect.fail(failure("cancel", error)),
              CallbackNotOpen: (error) => Effect.fail(failure("cancel", error)),
              CallbackAlreadyAnswered: (error) => Effect.fail(failure("cancel", error)),
              TurnNotFound: (error) => Effect.fail(failure("cancel", error))
            })
          ))
    }
    return service
  })
