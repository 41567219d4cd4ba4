/**
 * The engine's effectful shell around `decide` (pure) and `next` (the work a state calls for), made of parts in
 * `engine/`: the actor's mailbox (`mailbox.ts`), its commits (`commit.ts`), the work a commit starts and stops
 * (`reconcile.ts`), the trees in memory (`trees.ts`), ownership and recovery (`ownership.ts`), following the store
 * (`follow.ts`) and the `Transport` façade (`facade.ts`).
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
 * - Recovery: at start the engine takes up every unfinished tree it may claim (`store.leases.unfinished`), and then, every
 *   lease period, the trees whose owner's heartbeat lapsed. A tree's new owner starts no work until its `Resume` is
 *   stored: what was in flight under the last owner (a tool that may have run) is the Resume's to settle.
 * - Snapshots: a tree is loaded from its latest snapshot and the events after it (`snapshots.ts`); after a commit
 *   that took the log `snapshotEvery` events past the last snapshot, the actor saves one in the background.
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import type { SessionId } from "@parley/core/Ids"
import type * as Transport from "@parley/core/Transport"
import type * as SessionStore from "@parley/log/SessionStore"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type * as Connectors from "../Connectors.js"
import type { Options } from "../Engine.js"
import type * as Models from "../Models.js"
import type * as RuntimeTools from "../RuntimeTools.js"
import type { ResolvedTool } from "./agentTools.js"
import { markRuntimeTools, resolveTools } from "./agentTools.js"
import * as Commit from "./engine/commit.js"
import type { Core, TreeMissing } from "./engine/core.js"
import * as Facade from "./engine/facade.js"
import * as Follow from "./engine/follow.js"
import * as Live from "./engine/live.js"
import * as Mailbox from "./engine/mailbox.js"
import * as Ownership from "./engine/ownership.js"
import * as Reconcile from "./engine/reconcile.js"
import * as Trees from "./engine/trees.js"
import * as SignIn from "./signIn.js"
import * as Snapshots from "./snapshots.js"
import * as Validation from "./validation.js"
import * as Work from "./work.js"

/** The services the engine runs on. */
export interface Services {
  readonly store: SessionStore.Services
  readonly models: Models.Service
  readonly connectors: Connectors.Service
  readonly runtimeTools: RuntimeTools.Service
}

/** Tools and models, resolved once per agent definition; the definition a session stores. */
const definitions = (services: Services) => {
  const { connectors, models, runtimeTools } = services
  const noTools: ReadonlyMap<string, ResolvedTool> = new Map()
  // Resolved again once a connector's tools changed (an MCP server's list_changed): the next model step sees them.
  const toolsCache = new WeakMap<
    AgentSpec,
    { readonly revision: number; readonly tools: ReadonlyMap<string, ResolvedTool> }
  >()
  const toolsOf = (agent: AgentSpec) => {
    const revision = connectors.revision()
    let cached = toolsCache.get(agent)
    if (cached === undefined || cached.revision !== revision) {
      cached = { revision, tools: Result.getOrElse(resolveTools(agent, connectors), () => noTools) }
      toolsCache.set(agent, cached)
    }
    return cached.tools
  }
  const modelCache = new WeakMap<AgentSpec, LanguageModel.LanguageModel>()
  const modelOf = (agent: AgentSpec) =>
    Effect.suspend(() => {
      const cached = modelCache.get(agent)
      if (cached !== undefined) return Effect.succeed(cached)
      return Effect.tap(models.resolve(agent), (model) => Effect.sync(() => modelCache.set(agent, model)))
    })
  // The definition a session stores marks the tools this runtime runs: the same marked value for the same agent, so
  // the caches above keep working for many sessions of one agent.
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
  return { toolsOf, modelOf, marked, validate: Validation.make(models, connectors) }
}

/** An engine under placement: its transport, and where the cluster places it (`ownership.ts`). */
export interface Placed {
  readonly transport: Transport.Unlimited
  readonly place: (treeId: SessionId) => Effect.Effect<void, TreeMissing | SessionStore.StoreError>
  readonly release: (treeId: SessionId) => Effect.Effect<void>
}

/**
 * Makes the engine's parts and wires them through one `Core` record: each part reaches the others through it at call
 * time, so the order in which they are made only matters for what runs while they are made.
 */
export const make = (
  services: Services,
  options?: Options
): Effect.Effect<Transport.Unlimited, never, Scope.Scope> =>
  Effect.map(makeWith(services, options, false), (placed) => placed.transport)

/** An engine whose trees are placed on it (see `Placed`): no leases' heartbeat, no recovery scans. */
export const makePlaced = (services: Services, options?: Options): Effect.Effect<Placed, never, Scope.Scope> =>
  makeWith(services, options, true)

const makeWith = (
  services: Services,
  options: Options | undefined,
  placed: boolean
): Effect.Effect<Placed, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { runtimeTools, store } = services
    const { marked, modelOf, toolsOf, validate } = definitions(services)
    const live = Live.make()
    const core = {
      store,
      env: { toolsOf },
      owner: options?.owner ?? `engine-${crypto.randomUUID()}`,
      runsWork: options?.runsWork ?? true,
      placed: placed ? new Set<SessionId>() : undefined,
      leaseTtl: Duration.fromInputUnsafe(options?.leaseTtl ?? "10 seconds"),
      liveness: { validUntil: placed ? Infinity : 0 },
      snapshotEvery: Math.max(0, options?.snapshotEvery ?? Snapshots.defaultEvery),
      work: Work.make({ live, runtimeTools, toolsOf, modelOf }),
      live
    } as Core
    yield* Ownership.beat(core)
    Object.assign(core, Mailbox.make(core), Commit.make(core), Reconcile.make(core))
    Object.assign(
      core,
      yield* Trees.make(core, {
        idleTimeToLive: options?.idleTimeToLive ?? "1 minute",
        pausedTimeToLive: options?.pausedTimeToLive ?? "1 second",
        maxIdleTrees: options?.maxIdleTrees ?? 10_000
      })
    )
    Object.assign(core, { deadlines: yield* Follow.deadlines(core) })
    yield* Follow.changes(core)
    yield* Ownership.recover(core)
    return {
      transport: Facade.make(core, { validate, marked, completeSignIn: SignIn.make(services.connectors) }),
      place: (treeId) => Ownership.place(core, treeId),
      release: (treeId) => Ownership.release(core, treeId)
    }
  })
