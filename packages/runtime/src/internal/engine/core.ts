/**
 * What the engine's parts share: an actor (one per tree in memory), the envelopes of its mailbox, the engine's
 * settings and services, and `Core` — the record through which the parts (`mailbox.ts`, `commit.ts`, `reconcile.ts`,
 * `trees.ts`, `follow.ts`, `ownership.ts`, the façade) reach each other. `../engine.ts` makes the parts in order and
 * fills it in.
 */
import type { CallbackId, SessionId } from "@parley/core/Ids"
import type { SessionNotFound, TurnNotFound } from "@parley/core/ParleyError"
import { TransportFailure } from "@parley/core/ParleyError"
import type { TurnEvent } from "@parley/core/TurnEvent"
import type * as SessionStore from "@parley/log/SessionStore"
import type * as TreeState from "@parley/log/TreeState"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as FiberMap from "effect/FiberMap"
import type * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type * as Deadlines from "../deadlines.js"
import type { Command, Rejection, Reply } from "../decide.js"
import type * as Held from "../held.js"
import type * as Snapshots from "../snapshots.js"
import type * as Telemetry from "../telemetry.js"
import type { Env } from "../tx.js"
import type * as Work from "../work.js"
import type * as Live from "./live.js"

export type Decided = Exit.Exit<Result.Result<Reply, Rejection>, TransportFailure>

export interface Envelope {
  readonly command: Command
  /** Where the decision goes, when someone waits for it. */
  readonly reply: ((decided: Decided) => void) | undefined
}

export interface Actor {
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
  readonly scope: Scope.Closeable
  /** Whether the actor was evicted (its scope closed): a batch still being processed starts and stops no work. */
  closed: boolean
  /** The tree's spans, once a fiber working on it ran under a tracer (`../telemetry.ts`). */
  traced: Telemetry.Traced | undefined
}

/** Commands that only the owner's work gives: a follower (or a deposed owner) drops them. */
export const ownersOnly = new Set<Command["_tag"]>([
  "ModelStepDone",
  "ModelStepFailed",
  "ToolFinished",
  "WorkFailed",
  "Resume"
])

export class TreeMissing extends Data.TaggedError("TreeMissing")<{}> {}

/** Sleeps on the wall clock, whatever `Clock` the engine runs under (a store's outage, a lease: real time). */
export const sleepLive = (millis: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

/** A failure of the engine or its store, as the transport reports it. */
export const failure = (method: string, error: unknown) =>
  new TransportFailure({
    module: "Engine",
    method,
    description: error instanceof Error ? error.message : String(error),
    cause: error
  })

/** Runs the effects one after another (cheaper than `Effect.all` for the two or three of a batch). */
export const sequence = (effects: ReadonlyArray<Effect.Effect<void>>): Effect.Effect<void> =>
  effects.length === 0 ? Effect.void : effects.reduce((all, effect) => Effect.andThen(all, effect))

/** The engine's settings and the services its parts use directly. */
export interface Settings {
  readonly store: SessionStore.Services
  /** What decisions need beyond the log: the tools of an agent. */
  readonly env: Env
  /** This engine's name as an owner of trees. */
  readonly owner: string
  readonly runsWork: boolean
  /**
   * `undefined` under leases (the default: heartbeats, claims of lapsed trees, take-over scans). Under placement
   * (something else, a cluster, decides who owns a tree): the trees this engine was placed on, which a load claims
   * unconditionally; nothing else is ever claimed, and there is no heartbeat nor scan.
   */
  readonly placed: Set<SessionId> | undefined
  readonly leaseTtl: Duration.Duration
  /** Until when the engine's heartbeat keeps its leases, by the wall clock (`Liveness`). */
  readonly liveness: Liveness
  readonly snapshotEvery: number
  readonly work: Work.Work
  /** The live-only events (streamed deltas) of this process's model steps, for its readers. */
  readonly live: Live.Live
}

/**
 * Until when (epoch millis, wall clock) the engine's leases hold for certain: the start of the last heartbeat that
 * succeeded, plus the lease's time-to-live. Another engine may claim this one's trees once it has passed, so a tool is
 * begun only before it (less a margin). Infinite under placement (the cluster's shard lease fences the trees); 0 until
 * the first heartbeat succeeded.
 */
export interface Liveness {
  validUntil: number
}

/** How long before `Liveness.validUntil` the engine stops beginning tools: a sixth of the lease's time-to-live. */
export const startMargin = (leaseTtl: Duration.Duration) => Duration.toMillis(leaseTtl) / 6

/** `mailbox.ts`: commands into an actor's mailbox, processed by the fiber that finds it idle. */
export interface Mailboxes {
  readonly deliver: (actor: Actor, envelopes: ReadonlyArray<Envelope>) => Effect.Effect<void>
  readonly offer: (actor: Actor, command: Command) => Effect.Effect<void>
  readonly offerForked: (actor: Actor, command: Command) => Effect.Effect<void>
  readonly report: (actor: Actor, key: string, command: Command) => Effect.Effect<void>
  readonly submit: (actor: Actor, command: Command) => Effect.Effect<Reply, Rejection | TransportFailure>
}

/** `commit.ts`: a batch decided, appended and taken in. */
export interface Commits {
  readonly process: (actor: Actor, received: ReadonlyArray<Envelope>) => Effect.Effect<void>
}

/** `reconcile.ts`: what a commit starts and stops. */
export interface Reconciler {
  readonly reconcile: (actor: Actor) => Effect.Effect<void>
  readonly afterCommit: (actor: Actor, events: ReadonlyArray<TurnEvent>) => Effect.Effect<void>
  readonly snapshotIfDue: (actor: Actor) => Effect.Effect<void>
  readonly depose: (actor: Actor) => Effect.Effect<void>
}

/** `trees.ts`: the actors in memory, loaded and held. */
export interface Trees {
  readonly actors: Held.Held<SessionId, Actor, TreeMissing | SessionStore.StoreError>
  readonly install: (
    treeId: SessionId,
    scope: Scope.Closeable,
    restored: Snapshots.Restored,
    lease: SessionStore.Lease | undefined,
    first: Command | undefined
  ) => Effect.Effect<Actor, never, Scope.Scope>
  readonly holding: <A, E>(treeId: SessionId, f: (actor: Actor) => Effect.Effect<A, E>) => Effect.Effect<
    A,
    E | TreeMissing | SessionStore.StoreError
  >
  readonly withTree: <A, E>(
    method: string,
    sessionId: unknown,
    f: (actor: Actor, sessionId: SessionId) => Effect.Effect<A, E>,
    options?: { readonly read: boolean }
  ) => Effect.Effect<A, E | SessionNotFound | TransportFailure>
  readonly afterCatchingUp: <A, E>(
    actor: Actor,
    f: Effect.Effect<A, E>,
    unknown: (error: E) => boolean
  ) => Effect.Effect<A, E>
  readonly catchUp: (actor: Actor) => Effect.Effect<void>
  readonly caughtUp: (actor: Actor, method: string) => Effect.Effect<void, TransportFailure>
  readonly knownTurn: (
    actor: Actor,
    sessionId: SessionId,
    turnId: unknown,
    method: string
  ) => Effect.Effect<TreeState.Turn, TurnNotFound>
  readonly sessionNotFound: (method: string, sessionId: unknown) => SessionNotFound
}

/** The deadlines of the process's open callbacks: one ordered structure, one timer fiber. */
export interface Timers {
  readonly deadlines: Deadlines.Deadlines<CallbackId, SessionId>
}

/** The whole engine, as its parts see each other. */
export interface Core extends Settings, Mailboxes, Commits, Reconciler, Trees, Timers {}
