/**
 * The engine's effectful shell around `decide` (pure) and `next` (the work a state calls for).
 *
 * - One actor per tree: a mailbox of commands processed one batch at a time. A batch is decided against the state,
 *   its events appended in one `append`, then the state is the new one, the replies go out, and the work the state
 *   calls for (model steps, tools of the runtime) is started or stopped on a `FiberMap`. Work reports back as
 *   commands. A lost append race re-reads the log and decides again. The actor has no fiber: the fiber that sends a
 *   command to an idle tree processes it (and whatever arrives meanwhile); a busy tree's fiber takes it in its next
 *   batch.
 * - Eviction: actors are counted holds (each call on a tree holds its actor while it runs) with an idle time-to-live,
 *   armed in a deadline structure like the callbacks' (one timer fiber, no fiber per tree). An actor holds itself while
 *   its state calls for work; a tree whose turns all wait on callbacks holds nothing after the time-to-live, and is
 *   rebuilt from its log when an answer, a deadline or a reader's query arrives. The engine that creates a session
 *   makes its actor from the empty log at once.
 * - Deadlines: one ordered structure and one timer fiber for the process (`deadlines.ts`).
 * - The store's `changes` wake the tree an append by someone else (another process) touched.
 * - Leases: the engine is an owner (alive while it renews its heartbeat). A tree it loads is claimed: as the tree's
 *   owner the actor runs its work and appends under the lease (fenced: a deposed owner's append fails `LeaseLost`,
 *   and the actor turns follower). A tree another live engine owns is loaded as a follower: it decides and appends
 *   answers, cancels and new turns (the owner notices and does the work), and runs nothing.
 * - Recovery: at start the engine takes up every unfinished tree it may claim (`store.unfinished`), and then, every
 *   lease period, the trees whose owner's heartbeat lapsed. A tree's new owner starts no work until its `Resume` is
 *   stored: what was in flight under the last owner (a tool that may have run) is the Resume's to settle.
 * - Snapshots: a tree is loaded from its latest snapshot and the events after it (`snapshots.ts`); after a commit
 *   that took the log `snapshotEvery` events past the last snapshot, the actor saves one in the background.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type { AgentSpec } from "@parley/core/AgentSpec"
import { Answer as AnswerSchema } from "@parley/core/Answer"
import { Kind as CallbackKind } from "@parley/core/Callback"
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
import { OpenCallback, SessionInfo, TurnRef, TurnSnapshot } from "@parley/core/Transport"
import * as TreeState from "@parley/core/TreeState"
import type { TurnEvent } from "@parley/core/TurnEvent"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import { identity } from "effect/Function"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Connectors from "../Connectors.js"
import type { Options } from "../Engine.js"
import type * as Models from "../Models.js"
import type * as RuntimeTools from "../RuntimeTools.js"
import type * as SessionStore from "../SessionStore.js"
import type { ResolvedTool } from "./agentTools.js"
import { markRuntimeTools, resolveTools } from "./agentTools.js"
import * as Deadlines from "./deadlines.js"
import type { Command, Rejection, Reply } from "./decide.js"
import { decide } from "./decide.js"
import * as Held from "./held.js"
import * as Snapshots from "./snapshots.js"
import { startedBy } from "./toolCalls.js"
import { noValidation } from "./tx.js"
import * as Validation from "./validation.js"
import * as Work from "./work.js"

type Decided = Exit.Exit<Either.Either<Reply, Rejection>, TransportFailure>

interface Envelope {
  readonly command: Command
  /** Where the decision goes, when someone waits for it. */
  readonly reply: ((decided: Decided) => void) | undefined
}

interface Actor {
  readonly treeId: SessionId
  state: TreeState.TreeState
  /** Commands not processed yet, in order. */
  readonly mailbox: Array<Envelope>
  /** Whether a fiber is processing the mailbox: then a new command waits in it. */
  busy: boolean
  readonly work: FiberMap.FiberMap<string>
  /** Whether the actor holds itself because its state calls for work, so it is not evicted under it. */
  working: boolean
  /** Work that reported its result, which the state has not taken in yet: it must not start again meanwhile. */
  readonly reported: Set<string>
  /** The tree's lease when this engine owns it: only then does the actor run work and resume. */
  lease: SessionStore.Lease | undefined
  /**
   * Whether the `Resume` since the lease was taken is stored. Until then the actor starts no work: what was in flight
   * when the tree last had an owner (a tool that started and may have run) is the Resume's to settle, never run again
   * by a batch that happened to be decided before it.
   */
  resumed: boolean
  /** The `seq` of the latest snapshot of the tree, loaded or saved (or being saved); 0 for none. */
  snapshotSeq: number
  /** Whether a snapshot is being saved (one at a time per tree). */
  snapshotting: boolean
  /** The actor's scope: its background saves run in it; closed when the actor is evicted. */
  readonly scope: Scope.CloseableScope
  /** Whether the actor was evicted (its scope closed): a batch still being processed starts and stops no work. */
  closed: boolean
}

/** Commands that only the owner's work gives: a follower (or a deposed owner) drops them. */
const ownersOnly = new Set<Command["_tag"]>([
  "ModelStepDone",
  "ModelStepFailed",
  "ToolFinished",
  "WorkFailed",
  "Resume"
])

class TreeMissing extends Data.TaggedError("TreeMissing")<{}> {}

/** How long a tree waits before it tries again to store what a failing store refused. */
const retryMillis = 250

/** Sleeps on the wall clock, whatever `Clock` the engine runs under (a store's outage is real time). */
const sleepLive = (millis: number) =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

const failure = (method: string, error: unknown) =>
  new TransportFailure({
    module: "Engine",
    method,
    description: error instanceof Error ? error.message : String(error),
    cause: error
  })

/** Runs the effects one after another (cheaper than `Effect.all` for the two or three of a batch). */
const sequence = (effects: ReadonlyArray<Effect.Effect<void>>): Effect.Effect<void> =>
  effects.length === 0 ? Effect.void : effects.reduce((all, effect) => Effect.zipRight(all, effect))

/** The services the engine runs on. */
export interface Services {
  readonly store: SessionStore.Service
  readonly models: Models.Service
  readonly connectors: Connectors.Service
  readonly runtimeTools: RuntimeTools.Service
}

export const make = (
  services: Services,
  options?: Options
): Effect.Effect<Transport.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { connectors, models, runtimeTools, store } = services

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

    // -------------------------------------------------------------------------
    // The engine as an owner of trees: its heartbeat, and its retirement when it stops
    // -------------------------------------------------------------------------

    const owner = options?.owner ?? `engine-${crypto.randomUUID()}`
    const runsWork = options?.runsWork ?? true
    const leaseTtl = Duration.decode(options?.leaseTtl ?? "10 seconds")
    const beat = store.heartbeat(owner, leaseTtl).pipe(
      Effect.catchAll((error) => Effect.logWarning(`the engine ${owner} could not renew its leases`, error))
    )
    if (runsWork) {
      yield* beat
      yield* Effect.addFinalizer(() =>
        store.retire(owner).pipe(
          Effect.catchAll((error) => Effect.logWarning(`the engine ${owner} could not give up its leases`, error))
        )
      )
      yield* Effect.forkScoped(
        // On the wall clock, whatever `Clock` the engine runs under: leases are about real processes and real pauses,
        // and a test's jump of an hour must not cost a thousand heartbeats.
        Effect.forever(Effect.zipRight(sleepLive(Duration.toMillis(leaseTtl) / 3), beat))
      )
    }

    // The definition a session stores marks the tools this runtime runs: the same marked value for the same agent,
    // so the caches above keep working for many sessions of one agent.
    const markedCache = new WeakMap<AgentSpec, AgentSpec>()
    const hasHandler = (toolId: string) => Option.isSome(runtimeTools.get(toolId))
    const marked = (agent: AgentSpec) => {
      let stored = markedCache.get(agent)
      if (stored === undefined) {
        stored = markRuntimeTools(agent, hasHandler)
        markedCache.set(agent, stored)
      }
      return stored
    }

    // -------------------------------------------------------------------------
    // Snapshots: saved in the background, never in an append's transaction nor in the actor's loop
    // -------------------------------------------------------------------------

    const snapshotEvery = Math.max(0, options?.snapshotEvery ?? Snapshots.defaultEvery)
    const snapshotIfDue = (actor: Actor): Effect.Effect<void> =>
      Effect.suspend(() => {
        const state = actor.state
        if (snapshotEvery === 0 || actor.snapshotting || state.nextSeq - actor.snapshotSeq < snapshotEvery) {
          return Effect.void
        }
        // One save at a time; a failed one is tried again once the log grew by `snapshotEvery` more events.
        actor.snapshotting = true
        actor.snapshotSeq = state.nextSeq
        const saved = Effect.ensuring(Snapshots.save(store, state), Effect.sync(() => actor.snapshotting = false))
        // The log may have grown past the next one meanwhile.
        return Effect.asVoid(
          Effect.forkIn(Effect.interruptible(Effect.zipRight(saved, snapshotIfDue(actor))), actor.scope)
        )
      })

    const validate = Validation.make(models, connectors)
    const { modelStep, runTool } = Work.make({ store, runtimeTools, toolsOf, modelOf })

    // -------------------------------------------------------------------------
    // Actors
    // -------------------------------------------------------------------------

    /**
     * Processes the mailbox until it is empty, in the calling fiber, one batch at a time (uninterruptibly: a batch
     * decided is appended and taken in, whoever asked for it is interrupted meanwhile).
     */
    const drain = (actor: Actor): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (actor.mailbox.length === 0) {
          actor.busy = false
          return Effect.void
        }
        return Effect.zipRight(process(actor, actor.mailbox.splice(0, 256)), drain(actor))
      })

    /**
     * Puts commands in the mailbox. When no fiber is processing it, this one does (a command to an idle tree is decided
     * at once, with no hand-over to another fiber); else the fiber that is processing takes them in its next batch.
     */
    const deliver = (actor: Actor, envelopes: ReadonlyArray<Envelope>): Effect.Effect<void> =>
      Effect.suspend(() => {
        actor.mailbox.push(...envelopes)
        if (actor.busy) return Effect.void
        actor.busy = true
        return Effect.uninterruptible(Effect.onExit(drain(actor), (exit) =>
          Effect.sync(() => {
            if (Exit.isFailure(exit)) actor.busy = false
          })))
      })

    const offer = (actor: Actor, command: Command) => deliver(actor, [{ command, reply: undefined }])

    /** `offer`, processed by another fiber: the caller (a follower of changes, a timer) does not wait for it. */
    const offerForked = (actor: Actor, command: Command) => Effect.asVoid(Effect.forkDaemon(offer(actor, command)))

    /** A work item's result: from now until the state takes it in, the work is done, not missing. */
    const report = (actor: Actor, key: string, command: Command) =>
      Effect.suspend(() => {
        actor.reported.add(key)
        return offer(actor, command)
      })

    const workTree = (actor: Actor): Work.Tree => {
      const lease = actor.lease
      return {
        treeId: actor.treeId,
        state: actor.state,
        report: (key, command) => report(actor, key, command),
        // Deposed since the work started (its lease lost): a tool not begun yet is not begun at all.
        owned: () => lease !== undefined && actor.lease === lease && !actor.closed
      }
    }

    /**
     * The work the state calls for, by key: model steps, and the tools whose start this engine recorded under its
     * current lease — never a start recorded by another owner, or by this one at an earlier epoch.
     */
    const next = (actor: Actor) => {
      const work = new Map<string, () => Effect.Effect<void>>()
      const lease = actor.lease
      if (lease === undefined || !actor.resumed) return work
      for (const turn of TreeState.runningTurns(actor.state)) {
        if (turn.modelPending && turn.step !== undefined) {
          const step = turn.step
          work.set(`model:${step.messageId}`, () => modelStep(workTree(actor), turn, step))
        }
        for (const call of turn.calls) {
          if (startedBy(call, lease)) {
            work.set(`tool:${call.toolCallId}`, () => runTool(workTree(actor), turn, call))
          }
        }
      }
      return work
    }

    /**
     * Stops the work items `keys` — all but the calling fiber: a work item that reported its result may be the one
     * processing the mailbox, and ends by itself once it has.
     */
    const stop = (actor: Actor, keys: Iterable<string>) =>
      Effect.flatMap(Effect.fiberId, (self) =>
        Effect.forEach(keys, (key) => {
          const fiber = FiberMap.unsafeGet(actor.work, key)
          return Option.isSome(fiber) && !Equal.equals(fiber.value.id(), self)
            ? FiberMap.remove(actor.work, key)
            : Effect.void
        }, { discard: true }))

    /**
     * Starts the work the state calls for, stops what it no longer does, and keeps the tree alive meanwhile. Only the
     * changes cost an effect: a batch that starts and stops nothing runs none.
     */
    const reconcile = (actor: Actor): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (actor.closed) return Effect.void
        const wanted = next(actor)
        const effects: Array<Effect.Effect<void>> = []
        const stale: Array<string> = []
        for (const [key] of actor.work) if (!wanted.has(key)) stale.push(key)
        if (stale.length > 0) effects.push(stop(actor, stale))
        for (const key of actor.reported) if (!wanted.has(key)) actor.reported.delete(key)
        for (const [key, work] of wanted) {
          if (actor.reported.has(key) || FiberMap.unsafeHas(actor.work, key)) continue
          // Interruptible: the mailbox is processed uninterruptibly, and a fiber forked there would inherit that.
          effects.push(
            Effect.asVoid(
              FiberMap.run(actor.work, key, Effect.interruptible(Effect.suspend(work)), { onlyIfMissing: true })
            )
          )
        }
        if (wanted.size > 0 && !actor.working) {
          actor.working = true
          actors.hold(actor.treeId, actor)
        } else if (wanted.size === 0 && actor.working) {
          actor.working = false
          effects.push(actors.release(actor.treeId, actor))
        }
        return sequence(effects)
      })

    const afterCommit = (actor: Actor, events: ReadonlyArray<TurnEvent>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const effects: Array<Effect.Effect<void>> = []
        for (const event of events) {
          if (event._tag === "CallbackOpened" && event.callback.expiresAt !== undefined) {
            effects.push(deadlines.schedule(actor.treeId, event.callback.id, event.callback.expiresAt.epochMillis))
          } else if (event._tag === "CallbackResolved") {
            deadlines.cancel(event.callbackId)
          }
        }
        effects.push(reconcile(actor), snapshotIfDue(actor))
        return sequence(effects)
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

    /** The lease was taken over: stop the work, and go on as a follower. */
    const depose = (actor: Actor) =>
      Effect.gen(function*() {
        yield* Effect.logWarning(`the engine ${owner} lost tree ${actor.treeId} to another owner`)
        actor.lease = undefined
        actor.reported.clear()
        if (!actor.closed) yield* stop(actor, [...actor.work].map(([key]) => key))
        yield* reconcile(actor)
      })

    /** Tells whoever waits for these commands that they failed. */
    const fail = (envelopes: ReadonlyArray<Envelope>, error: TransportFailure) => {
      for (const envelope of envelopes) envelope.reply?.(Exit.fail(error))
    }

    const process = (actor: Actor, received: ReadonlyArray<Envelope>) =>
      Effect.gen(function*() {
        let batch = actor.lease === undefined
          ? received.filter((envelope) => !ownersOnly.has(envelope.command._tag))
          : received
        let conflicted = batch.some((envelope) => envelope.command._tag === "Settle")
        for (let attempt = 0; attempt < 5; attempt++) {
          // Events appended by others first: read them, then settle what they call for before the batch.
          const foreign = conflicted ? yield* refresh(actor) : []
          if (foreign.length > 0) yield* afterCommit(actor, foreign)
          const now = yield* DateTime.now
          let state = actor.state
          const events: Array<TurnEvent> = []
          // The tree's owner records the starts of the tools it will run, once its Resume settled what the last owner
          // left in flight (the Resume is first in a new owner's mailbox); anyone else records decisions only.
          let executor = actor.resumed ? actor.lease : undefined
          if (foreign.length > 0) {
            const settled = decide(state, { _tag: "Settle" }, now, env, executor)
            state = settled.state
            events.push(...settled.events)
          }
          const replies: Array<Either.Either<Reply, Rejection>> = []
          for (const envelope of batch) {
            if (envelope.command._tag === "Resume") executor = actor.lease
            const decision = decide(state, envelope.command, now, env, executor)
            state = decision.state
            events.push(...decision.events)
            replies.push(decision.reply)
          }
          const appended = events.length === 0
            ? Either.right(undefined)
            : yield* Effect.either(store.append(actor.treeId, actor.state.nextSeq, events, actor.lease))
          if (Either.isRight(appended)) {
            actor.state = state
            if (actor.lease !== undefined && batch.some((envelope) => envelope.command._tag === "Resume")) {
              actor.resumed = true
            }
            yield* afterCommit(actor, events)
            for (let i = 0; i < batch.length; i++) batch[i].reply?.(Exit.succeed(replies[i]))
            return
          }
          if (appended.left._tag === "StoreError") {
            // Who waits gets the error. What nobody waits for (a work item's result, a resume, a settle) is tried
            // again after a pause: dropped, it would leave its turn waiting until the tree is loaded again.
            const unanswered = batch.filter((envelope) => envelope.reply === undefined)
            if (unanswered.length > 0) {
              yield* Effect.logWarning(`the store failed; tree ${actor.treeId} tries again in ${retryMillis} ms`)
              yield* Effect.forkDaemon(
                Effect.zipRight(Effect.interruptible(sleepLive(retryMillis)), deliver(actor, unanswered))
              )
            }
            return fail(batch, failure("append", appended.left))
          }
          if (appended.left._tag === "LeaseLost") {
            yield* depose(actor)
            batch = batch.filter((envelope) => !ownersOnly.has(envelope.command._tag))
          }
          // Someone else appended first (or took the tree over): read what they wrote and decide again.
          conflicted = true
        }
        fail(batch, failure("append", "the log kept moving under the engine"))
      }).pipe(
        Effect.catchAllCause((cause) => {
          fail(received, failure("decide", Cause.squash(cause)))
          return Effect.logError("the engine could not process commands", cause)
        })
      )

    /**
     * Makes the actor of a tree whose state is known, in `scope` (closed when it is evicted): registered, the deadlines
     * of its open callbacks armed. `first` is its first command, processed before any other by another fiber (not this
     * one: it is loading the tree, which the processing holds). A tree this engine just created needs none.
     */
    const install = (
      treeId: SessionId,
      scope: Scope.CloseableScope,
      restored: Snapshots.Restored,
      lease: SessionStore.Lease | undefined,
      first: Command | undefined
    ): Effect.Effect<Actor, never, Scope.Scope> =>
      Effect.gen(function*() {
        const actor: Actor = {
          treeId,
          state: restored.state,
          mailbox: [],
          busy: false,
          work: yield* FiberMap.make<string>(),
          working: false,
          reported: new Set(),
          lease,
          resumed: first === undefined && lease !== undefined,
          snapshotSeq: restored.seq,
          snapshotting: false,
          scope,
          closed: false
        }
        // Runs before the work's `FiberMap` closes (finalizers run in reverse order).
        yield* Effect.addFinalizer(() => Effect.sync(() => actor.closed = true))
        for (const id of actor.state.open) {
          const expiresAt = TreeState.callback(actor.state, id)?.callback.expiresAt
          if (expiresAt !== undefined) yield* deadlines.schedule(treeId, id, expiresAt.epochMillis)
        }
        if (first !== undefined) {
          actor.mailbox.push({ command: first, reply: undefined })
          yield* Effect.forkDaemon(deliver(actor, []))
        }
        // A long log replayed (no snapshot yet, or an unusable one): the next load starts from a snapshot.
        yield* snapshotIfDue(actor)
        return actor
      })

    const load = (
      treeId: SessionId,
      scope: Scope.CloseableScope
    ): Effect.Effect<Actor, TreeMissing | SessionStore.StoreError, Scope.Scope> =>
      Effect.gen(function*() {
        const header = yield* store.getTree(treeId)
        if (Option.isNone(header)) return yield* new TreeMissing()
        // The latest snapshot and the events after it, or the whole log.
        const restored = yield* Snapshots.restore(store, header.value)
        const lease = runsWork ? Option.getOrUndefined(yield* store.claim(treeId, owner)) : undefined
        // Whatever was in flight when the tree was last in memory is taken up again, by its owner only.
        return yield* install(treeId, scope, restored, lease, { _tag: lease === undefined ? "Settle" : "Resume" })
      })

    // Actors in memory: loaded once, held by the calls on them and by their own work, evicted when idle (`held.ts`).
    const actors = yield* Held.make({ load, idleTimeToLive: options?.idleTimeToLive ?? "1 minute" })

    const holding = <A, E>(treeId: SessionId, f: (actor: Actor) => Effect.Effect<A, E>) =>
      actors.holding(treeId, f, identity)

    // -------------------------------------------------------------------------
    // Entry points
    // -------------------------------------------------------------------------

    const sessionNotFound = (method: string, sessionId: unknown) =>
      new SessionNotFound({ module: "Engine", method, sessionId: String(sessionId) })

    const decodeSessionId = Schema.decodeUnknownEither(SessionId)
    const decodeTurnId = Schema.decodeUnknownEither(TurnIdSchema)
    const decodeCallbackId = Schema.decodeUnknownEither(CallbackIdSchema)
    const decodeAnswer = Schema.decodeUnknownEither(AnswerSchema)
    const decodeKind = Schema.decodeUnknownEither(CallbackKind)

    /**
     * Runs `f` with the actor of the tree `sessionId` belongs to (loading it if needed), holding it in memory meanwhile;
     * a `read` (that only looks at the state) takes a tree already in memory as it is.
     */
    const withTree = <A, E>(
      method: string,
      sessionId: unknown,
      f: (actor: Actor, sessionId: SessionId) => Effect.Effect<A, E>,
      options: { readonly read: boolean } = { read: false }
    ): Effect.Effect<A, E | SessionNotFound | TransportFailure> => {
      // The id of a tree in memory is valid, and its own tree's: no decoding, no lookup.
      const known = typeof sessionId === "string" ? actors.get(sessionId as SessionId) : undefined
      const id = known !== undefined ? Either.right(known.treeId) : decodeSessionId(sessionId)
      if (Either.isLeft(id)) {
        return Effect.fail(sessionNotFound(method, sessionId))
      }
      const inTree = (actor: Actor): Effect.Effect<A, E | SessionNotFound> =>
        TreeState.session(actor.state, id.right) !== undefined
          ? f(actor, id.right)
          : afterCatchingUp(
            actor,
            Effect.suspend(() =>
              TreeState.session(actor.state, id.right) === undefined
                ? Effect.fail(sessionNotFound(method, sessionId))
                : Effect.void
            ),
            () => true
          ).pipe(Effect.zipRight(Effect.suspend(() => f(actor, id.right))))
      const treeOf = known !== undefined
        ? Effect.succeed(Option.some(known.treeId))
        : Effect.mapError(store.treeOf(id.right), (error) => failure(method, error))
      return treeOf.pipe(
        Effect.flatMap((treeId) => {
          if (Option.isNone(treeId)) return Effect.fail(sessionNotFound(method, sessionId))
          // A read of a tree in memory needs no reference to it: its state is a value, valid even if it is evicted.
          const held = options.read ? actors.get(treeId.value) : undefined
          if (held !== undefined) return inTree(held)
          return actors.holding(
            treeId.value,
            inTree,
            (error) => error._tag === "TreeMissing" ? sessionNotFound(method, sessionId) : failure(method, error)
          )
        })
      )
    }

    /**
     * Runs `f`; when it fails because the actor does not know a session, turn or callback (`unknown`), which another
     * process may have appended since the actor last read the log, the actor reads the log first (`Settle`) and `f`
     * runs once more. An answer by id from another process must not be refused for a copy that lags behind.
     */
    const afterCatchingUp = <A, E>(actor: Actor, f: Effect.Effect<A, E>, unknown: (error: E) => boolean) =>
      Effect.catchIf(f, unknown, () => Effect.zipRight(catchUp(actor), f))

    /** The actor reads what others appended, held in memory meanwhile (a read may have found it unheld). */
    const catchUp = (actor: Actor) =>
      holding(actor.treeId, (held) => submit(held, { _tag: "Settle" })).pipe(Effect.ignore)

    const submit = (actor: Actor, command: Command) =>
      Effect.gen(function*() {
        let decided: Decided | undefined
        let waiting: Deferred.Deferred<Either.Either<Reply, Rejection>, TransportFailure> | undefined
        yield* deliver(actor, [{
          command,
          reply: (exit) => {
            decided = exit
            if (waiting !== undefined) Deferred.unsafeDone(waiting, exit)
          }
        }])
        // Decided already when this fiber processed the mailbox; else wait for the fiber that does.
        if (decided === undefined) {
          waiting = yield* Deferred.make<Either.Either<Reply, Rejection>, TransportFailure>()
          if (decided !== undefined) Deferred.unsafeDone(waiting, decided)
          decided = yield* Effect.exit(Deferred.await(waiting))
        }
        const either = yield* decided
        return yield* either
      })

    const turnOf = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) => {
      const id = decodeTurnId(turnId)
      const turn = Either.isRight(id) ? TreeState.turn(actor.state, id.right) : undefined
      return turn === undefined || turn.sessionId !== sessionId
        ? Effect.fail(new TurnNotFound({ module: "Engine", method, sessionId, turnId: String(turnId) }))
        : Effect.succeed(turn)
    }

    /**
     * Lets the actor read what others appended before its state is read, when the log is ahead of it: a reader of the
     * tree's events has them from the store, and may ask about events of another process the actor has not heard of
     * yet (its `Settle` comes with the store's `changes`) — `Turn.result` confirming another process's `TurnBlocked`.
     */
    const caughtUp = (actor: Actor, method: string) =>
      Effect.flatMap(
        Effect.mapError(store.read(actor.treeId, actor.state.nextSeq), (error) => failure(method, error)),
        (ahead) => ahead.length === 0 ? Effect.void : catchUp(actor)
      )

    /** `turnOf`, after catching up with the log when the actor does not know the turn. */
    const knownTurn = (actor: Actor, sessionId: SessionId, turnId: unknown, method: string) =>
      afterCatchingUp(actor, Effect.suspend(() => turnOf(actor, sessionId, turnId, method)), () => true)

    /**
     * The session's events from `from` on in a mailbox (its tree's, for a root session), the store's errors turned into
     * the transport's: a fiber of the caller's scope moves each batch on.
     */
    const subscribe = (method: string, sessionId: unknown, from: number) =>
      Effect.gen(function*() {
        const { id, treeId } = yield* withTree(
          method,
          sessionId,
          (actor, id) => Effect.succeed({ id, treeId: actor.treeId }),
          { read: true }
        )
        const cursor = Number.isSafeInteger(from) && from > 0 ? from : 0
        const source = yield* Effect.mapError(
          store.subscribe(treeId, cursor, id === treeId ? undefined : id),
          (error) => failure(method, error)
        )
        const events = yield* Mailbox.make<TurnEvent, SessionNotFound | TransportFailure>()
        const move: Effect.Effect<void, SessionStore.StoreError> = Effect.flatMap(source.takeAll, ([batch, done]) => {
          events.unsafeOfferAll(batch)
          return done ? events.end : move
        })
        yield* move.pipe(
          Effect.catchAll((error) => events.fail(failure(method, error))),
          Effect.forkScoped
        )
        return events as Mailbox.ReadonlyMailbox<TurnEvent, SessionNotFound | TransportFailure>
      })

    const deadlines = yield* Deadlines.make((treeId, callbackId) =>
      withTree("expire", treeId, (actor) => submit(actor, { _tag: "Expire", callbackId })).pipe(
        Effect.catchAllCause((cause) => Effect.logError(`the deadline of ${callbackId} could not be applied`, cause))
      )
    )

    // Appends by anyone: a tree in memory reads them; a tree out of memory is loaded, which settles it.
    const noticed = (change: SessionStore.Change): Effect.Effect<void> => {
      const actor = actors.get(change.treeId)
      if (actor !== undefined) {
        return actor.state.nextSeq >= change.nextSeq ? Effect.void : offerForked(actor, { _tag: "Settle" })
      }
      return Effect.forkDaemon(
        withTree("changes", change.treeId, (tree) => submit(tree, { _tag: "Settle" })).pipe(Effect.ignore)
      )
    }
    const changes = yield* store.changes
    const follow: Effect.Effect<void, SessionStore.StoreError> = Effect.flatMap(
      changes.takeAll,
      ([batch, done]) => Effect.zipRight(Effect.forEach(batch, noticed, { discard: true }), done ? Effect.void : follow)
    )
    yield* follow.pipe(
      Effect.catchAllCause((cause) => Effect.logError("the engine stopped following the store's changes", cause)),
      Effect.forkScoped
    )

    // Recovery: the unfinished trees this engine may claim are loaded, which resumes them; later, every lease period,
    // the trees whose owner stopped beating. A tree loaded as a follower is claimed when its owner's lease lapses.
    const takeUp = (own: boolean) =>
      store.unfinished(owner).pipe(
        Effect.flatMap((trees) =>
          Effect.forEach(trees, (tree) => {
            if (!own && tree.owner === owner) return Effect.void
            const actor = actors.get(tree.treeId)
            if (actor === undefined) {
              return holding(tree.treeId, () => Effect.void)
            }
            if (actor.lease !== undefined) return Effect.void
            return Effect.flatMap(store.claim(tree.treeId, owner), (lease) => {
              if (Option.isNone(lease) || actors.get(tree.treeId) !== actor) return Effect.void
              actor.lease = lease.value
              actor.resumed = false
              return offer(actor, { _tag: "Resume" })
            })
          }, { concurrency: 16, discard: true })
        ),
        Effect.catchAllCause((cause) => Effect.logWarning("the engine could not take up unfinished trees", cause))
      )
    if (runsWork) {
      yield* Effect.forkScoped(
        Effect.zipRight(
          takeUp(true),
          Effect.forever(Effect.zipRight(sleepLive(Duration.toMillis(leaseTtl)), takeUp(false)))
        )
      )
    }

    const createSession = (given: AgentSpec) =>
      Effect.gen(function*() {
        yield* validate(given)
        const agent = marked(given)
        const treeId = yield* newSessionId
        const createdAt = yield* DateTime.now
        yield* Effect.mapError(
          store.createTree({ treeId, agent, createdAt }),
          (error) => failure("createSession", error)
        )
        // The engine that creates a session owns its tree (unless it runs no work): another process that reads it
        // first only follows it.
        const lease = runsWork
          ? Option.getOrUndefined(
            yield* Effect.mapError(store.claim(treeId, owner), (error) => failure("createSession", error))
          )
          : undefined
        // Its actor is made at once from the state of an empty log: the first message reads nothing from the store.
        yield* actors.insert(
          treeId,
          (scope) =>
            install(treeId, scope, { state: TreeState.empty({ treeId, agent, createdAt }), seq: 0 }, lease, undefined)
        )
        return new SessionInfo({ sessionId: treeId, agent: agent.name, createdAt }, noValidation)
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
              }, noValidation)
            )
        }, { read: true }),
      getTurn: (sessionId, turnId) =>
        withTree("getTurn", sessionId, (actor, id) =>
          Effect.map(
            knownTurn(actor, id, turnId, "getTurn"),
            (turn) => new TurnRef({ sessionId: id, turnId: turn.turnId, cursor: turn.cursor }, noValidation)
          ), { read: true }),
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
      subscribe: (sessionId, from) => subscribe("subscribe", sessionId, from),
      events: (sessionId, from) =>
        Stream.unwrapScoped(Effect.map(subscribe("events", sessionId, from), Mailbox.toStream)),
      snapshot: (sessionId, turnId) =>
        withTree("snapshot", sessionId, (actor, id) =>
          Effect.zipRight(
            caughtUp(actor, "snapshot"),
            knownTurn(actor, id, turnId, "snapshot")
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
      listOpen: (filter) =>
        Effect.gen(function*() {
          // The filter crosses the port too: decoded first, a malformed one is a typed error.
          const fields = (typeof filter === "object" && filter !== null ? filter : {}) as Transport.ListOpenFilter
          const sessionId = fields.sessionId === undefined ? undefined : decodeSessionId(fields.sessionId)
          const kind = fields.kind === undefined ? undefined : decodeKind(fields.kind)
          if (sessionId !== undefined && Either.isLeft(sessionId)) {
            return yield* failure("listOpen", `not a session id: ${String(fields.sessionId)}`)
          }
          if (kind !== undefined && Either.isLeft(kind)) {
            return yield* failure("listOpen", `not a kind of callback: ${String(fields.kind)}`)
          }
          const rows = yield* Effect.mapError(
            store.listOpen({ sessionId: sessionId?.right, kind: kind?.right }),
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
              store.read(actor.treeId, state.nextSeq),
              (events) => events.length === 0 ? state : TreeState.foldFrom(state, events)
            )
          }
          const found = yield* Effect.forEach(byTree, ([treeId, ids]) =>
            withTree(
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
