/**
 * The engine: runs agent turns as a projection of their tree's event log. Each tree (a root session and its
 * subagents) has one actor that decides commands (messages, answers, cancels, results of work) with a pure `decide`,
 * appends the events, and starts the work the new state calls for (model steps, tools of the runtime). Its state is
 * `TreeState.fold` of the log, so a tree with nothing to do is evicted after an idle time-to-live and rebuilt from
 * its log (its latest snapshot and the events after it) when an answer, a deadline or a query arrives — in this
 * process or after a restart.
 *
 * The engine implements the `Transport` protocol port; `LocalTransport.layer` provides it in-process.
 *
 * @example
 * ```ts
 * import type { AgentSpec } from "@parley/core"
 * import { Engine } from "@parley/runtime"
 * import { Effect } from "effect"
 *
 * const program = (spec: AgentSpec.AgentSpec) => Effect.gen(function*() {
 *   const engine = yield* Engine.make
 *   const session = yield* engine.createSession(spec)
 * })
 * ```
 *
 * @since 0.1.0
 */
import type { SessionId } from "@parley/core/Ids"
import { SessionNotFound, TransportFailure } from "@parley/core/ParleyError"
import type * as Transport from "@parley/core/Transport"
import { services as storeServices, type SessionStore } from "@parley/log/SessionStore"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Connectors } from "./Connectors.js"
import * as internal from "./internal/engine.js"
import { Models } from "./Models.js"
import { RuntimeTools } from "./RuntimeTools.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** How long a tree with nothing to do stays in memory after its last use (default: one minute). */
  readonly idleTimeToLive?: Duration.Input | undefined
  /**
   * How long a paused tree — its turns all wait on callbacks — stays in memory after its last use (default: one
   * second): long enough for a program that answers at once, also over HTTP, and a tree that waits for a person costs no memory
   * meanwhile: it is rebuilt from its log (snapshot and tail) when the answer comes. Never longer than
   * `idleTimeToLive`.
   */
  readonly pausedTimeToLive?: Duration.Input | undefined
  /**
   * How many trees with nothing to do may stay in memory at once (default: 10,000): past it, the longest idle one
   * leaves at once, whatever the load.
   */
  readonly maxIdleTrees?: number | undefined
  /**
   * This engine's name as the owner of the trees it runs (default: a random one per start). An engine restarted under
   * the same name takes its unfinished trees back at once; under a new name, once their leases lapse. Every claim
   * raises the tree's epoch, so a process that held the name before (paused, not dead) can no longer append to them.
   */
  readonly owner?: string | undefined
  /** How long the engine's leases hold without its heartbeat (default: 10 seconds; renewed every third of it). */
  readonly leaseTtl?: Duration.Input | undefined
  /**
   * Whether the engine takes trees to run their work (default: true). `false` makes a process that only creates
   * sessions, sends messages, answers, cancels and reads: the engines that own the trees (elsewhere) run them.
   */
  readonly runsWork?: boolean | undefined
  /**
   * How many events a tree's log grows by between two snapshots of its projection (default: 500; 0: this engine saves
   * none, and still loads from those another engine saved). A tree is loaded from its latest snapshot and the events
   * after it instead of its whole log; the engine saves one in the background after a commit (or a load) that took the
   * log this many events past the last snapshot.
   */
  readonly snapshotEvery?: number | undefined
}

/**
 * Builds an engine over the store, the models, the connectors and the runtime tools in context. Its turns run in the
 * scope.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeWith = (
  options: Options
): Effect.Effect<Transport.Unlimited, never, SessionStore | Models | Connectors | RuntimeTools | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* storeServices
    const models = yield* Models
    const connectors = yield* Connectors
    const runtimeTools = yield* RuntimeTools
    return yield* internal.make({ store, models, connectors, runtimeTools }, options)
  })

/**
 * An engine with the default options.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: Effect.Effect<
  Transport.Unlimited,
  never,
  SessionStore | Models | Connectors | RuntimeTools | Scope.Scope
> = makeWith({})

/**
 * An engine whose trees are **placed** on it by something else — a cluster whose shard holder is the one engine that
 * runs a tree's commands and work — instead of leased: it keeps no heartbeat and scans for no tree to take over.
 *
 * - `transport` serves the engine as usual; reads and the commands of a tree this engine is not placed on are those of
 *   a follower (decided, appended, the work left to the owner).
 * - `place(treeId)` says this engine now owns the tree: it claims it unconditionally (the store's `Leases`
 *   `claim(…, { unconditional: true })`; the raised epoch fences off whoever held it, a deposed owner's append fails
 *   `LeaseLost`) unless it holds a lease already, and resumes what was in flight, as a new owner does under leases.
 *   Every later load of the tree in this engine claims it again the same way, until `release(treeId)`.
 * - `release(treeId)`: the engine no longer owns the tree; a tree in memory keeps its lease and work until another
 *   engine's claim deposes it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Placed {
  readonly transport: Transport.Unlimited
  readonly place: (treeId: SessionId) => Effect.Effect<void, SessionNotFound | TransportFailure>
  readonly release: (treeId: SessionId) => Effect.Effect<void>
}

/**
 * Builds an engine under placement (see `Placed`) over the services in context. `leaseTtl` plays no part.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makePlaced = (
  options: Options
): Effect.Effect<Placed, never, SessionStore | Models | Connectors | RuntimeTools | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* storeServices
    const models = yield* Models
    const connectors = yield* Connectors
    const runtimeTools = yield* RuntimeTools
    const placed = yield* internal.makePlaced({ store, models, connectors, runtimeTools }, options)
    return {
      transport: placed.transport,
      place: (treeId) =>
        placed.place(treeId).pipe(
          Effect.catchTags({
            TreeMissing: () =>
              Effect.fail(new SessionNotFound({ module: "Engine", method: "place", sessionId: treeId })),
            StoreError: (error) =>
              Effect.fail(
                new TransportFailure({ module: "Engine", method: "place", description: error.message, cause: error })
              )
          })
        ),
      release: placed.release
    }
  })
