/**
 * Parley's runtime on `@effect/cluster`: each session tree is a `Tree` entity (`TreeEntity`), placed on the runner
 * that holds its shard, whose engine owns the tree (`Engine.makePlaced`: claimed unconditionally when placed, no
 * per-tree heartbeat, no take-over scans; every append still fenced by the tree's epoch). The `Transport` it provides
 * is the same as `LocalTransport.layer`'s: commands that change a tree (send, answer, cancel, revoke a grant) go to the
 * tree's runner through the entity's client; creating sessions and every read are answered by this process's engine
 * from the log. A singleton wakes the trees a dead runner left (`Resume`).
 *
 * - `layer(options)` needs a `Sharding` (a runner's: `NodeClusterSocket.layer({ storage: "byo" })` with
 *   `MessageStorage.layerNoop` and `SqlRunnerStorage.layer` on the store's PostgreSQL), besides what the engine needs.
 * - `layerSingle(options)`: one process, its own in-memory cluster (development, tests).
 * - `layerClient(options)`: a process that is no runner (a web front, a worker answering approvals): it sends every
 *   command to the tree's runner and answers reads from the log; it runs nothing and holds no shard.
 *
 * The cluster's own fibers run on the wall clock; the engine's decisions and deadlines on the program's `Clock`.
 *
 * @example
 * ```ts
 * import { ClusterRuntime } from "@parley/cluster"
 * import type { Models } from "@parley/runtime"
 * import { Connectors, RuntimeTools } from "@parley/runtime"
 * import { SqlStore } from "@parley/store-sql"
 * import { Layer } from "effect"
 *
 * // One process, its own cluster; the trees' logs in a SQLite file. Commands go through the Tree entity.
 * const runtime = (models: Layer.Layer<Models.Models>) =>
 *   ClusterRuntime.layerSingle().pipe(
 *     Layer.provide([
 *       SqlStore.layerSqlite({ filename: "parley.db" }),
 *       Connectors.layerEmpty,
 *       RuntimeTools.layerEmpty,
 *       models
 *     ])
 *   )
 * ```
 *
 * @since 0.1.0
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { Transport } from "@parley/core/Transport"
import { services as storeServices, type SessionStore } from "@parley/log/SessionStore"
import type { Connectors } from "@parley/runtime/Connectors"
import * as Engine from "@parley/runtime/Engine"
import type { Models } from "@parley/runtime/Models"
import type { RuntimeTools } from "@parley/runtime/RuntimeTools"
import * as Clock from "effect/Clock"
import * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as RunnerStorage from "effect/cluster/RunnerStorage"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as RpcSerialization from "effect/rpc/RpcSerialization"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type * as SocketServer from "effect/socket/SocketServer"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import * as ClusterStatus from "./ClusterStatus.js"
import * as Handlers from "./internal/handlers.js"
import * as ShardMetrics from "./internal/shardMetrics.js"
import * as ClusterTransport from "./internal/transport.js"
import * as WakeUp from "./internal/wakeUp.js"
import * as RunnerMetrics from "./RunnerMetrics.js"
import { Tree } from "./TreeEntity.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  /** The engine's options (`leaseTtl` plays no part: the cluster places trees). */
  readonly engine?: Engine.Options | undefined
  /** How long a `Tree` entity lives without a message (default: the cluster's `entityMaxIdleTime`, one minute). */
  readonly entityMaxIdleTime?: Duration.Input | undefined
  /**
   * How often the wake-up singleton looks for trees a dead runner left mid-turn, or paused with a deadline due
   * (default: 5 seconds).
   */
  readonly wakeUpInterval?: Duration.Input | undefined
}

/** Builds a layer's services on the wall clock: the fibers it forks keep it, whatever `Clock` the program runs under. */
const onWallClock = <A, E, R>(layer: Layer.Layer<A, E, R>, wallClock: Clock.Clock): Layer.Layer<A, E, R> =>
  Layer.provide(layer, Layer.succeed(Clock.Clock, wallClock))

/** The system's clock (`Clock.Clock`'s default), whatever `Clock` the program runs under. */
const systemClock = (): Clock.Clock => Clock.Clock.defaultValue()

/**
 * The runtime on a runner: the `Tree` entity registered on the `Sharding` in context, its engine, the wake-up
 * singleton, and the `Transport`. It counts the runner's `RunnerMetrics` (its shards sampled every second when the
 * `ShardingConfig` is in context, as `layerSocket` and `layerSingle` give it).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Transport, never, Sharding.Sharding | SessionStore | Models | Connectors | RuntimeTools> =>
  Layer.effectContext(Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const wallClock = systemClock()
    const store = yield* storeServices
    // The engine in a scope of its own, closed by one finalizer after it says the runner is stopping: a layer's
    // finalizers may run at once, and the handlers must know before the engine refuses commands.
    let stopping = false
    const engineScope = yield* Scope.make()
    yield* Effect.addFinalizer((exit) =>
      Effect.andThen(Effect.sync(() => void (stopping = true)), Scope.close(engineScope, exit))
    )
    const engine = yield* Scope.provide(Engine.makePlaced(options.engine ?? {}), engineScope)
    const sharding = yield* Sharding.Sharding
    const config = yield* Effect.serviceOption(ShardingConfig.ShardingConfig)
    const runner = Option.flatMap(config, (config) => config.runnerAddress)
    const metrics = RunnerMetrics.forRunner(
      Option.match(runner, { onNone: () => "none", onSome: (address) => `${address.host}:${address.port}` })
    )
    if (Option.isSome(config)) {
      const shards = { groups: config.value.availableShardGroups, perGroup: config.value.shardsPerGroup }
      yield* Effect.provideService(ShardMetrics.sample(sharding, shards, metrics, "1 second"), Clock.Clock, wallClock)
    }
    yield* Layer.build(
      onWallClock(
        Layer.mergeAll(
          Handlers.layer(engine, clock, { maxIdleTime: options.entityMaxIdleTime }, metrics, () => stopping),
          WakeUp.layer(store, { interval: options.wakeUpInterval ?? "5 seconds", clock })
        ),
        wallClock
      ).pipe(Layer.provide(Layer.succeed(Sharding.Sharding, sharding)))
    )
    const client = yield* Tree.client
    return Context.make(
      Transport,
      ClusterTransport.make({ local: engine.transport, store, client, wallClock })
    )
  }))

/**
 * A cluster of one process, held in memory: shards and runners in memory, messages volatile. For development and
 * tests; the trees' logs are in the `SessionStore` as ever. Its `Sharding` is provided too (`TreeEntity.Tree.client`;
 * it runs on the wall clock), and its `ClusterStatus`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSingle = (
  options: Options & { readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined } = {}
): Layer.Layer<
  Transport | Sharding.Sharding | ClusterStatus.ClusterStatus,
  never,
  SessionStore | Models | Connectors | RuntimeTools
> =>
  Layer.merge(layer(options), ClusterStatus.layer).pipe(
    Layer.provideMerge(onWallClock(
      Sharding.layer.pipe(
        Layer.provide(Runners.layerNoop),
        Layer.provideMerge(Layer.mergeAll(MessageStorage.layerNoop, RunnerStorage.layerMemory, RunnerHealth.layerNoop)),
        Layer.provideMerge(ShardingConfig.layer(options.shardingConfig))
      ),
      systemClock()
    ))
  )

/**
 * A runner of a cluster over sockets (`@effect/cluster`'s `SocketRunner` on Node, msgpack): it listens at
 * `shardingConfig.runnerAddress` (or `runnerListenAddress`), keeps its registration and shard locks in the
 * `SqlClient`'s database (`SqlRunnerStorage`: `cluster_` tables; on PostgreSQL, advisory locks), and stores no
 * message (`MessageStorage.layerNoop`: the trees' logs are the record). The configuration is only what is given
 * (the environment is not read). Its `Sharding` is provided too, and its `ClusterStatus`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSocket = (
  options: Options & { readonly shardingConfig: Partial<ShardingConfig.ShardingConfig["Service"]> }
): Layer.Layer<
  Transport | Sharding.Sharding | ClusterStatus.ClusterStatus,
  SocketServer.SocketServerError | SqlError.SqlError,
  SessionStore | Models | Connectors | RuntimeTools | SqlClient.SqlClient
> => {
  const config = ShardingConfig.layer(options.shardingConfig)
  const runner = SocketRunner.layer.pipe(
    Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
    Layer.provide(
      RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))
    ),
    Layer.provideMerge(Layer.merge(MessageStorage.layerNoop, SqlRunnerStorage.layer)),
    Layer.provideMerge(config),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )
  return Layer.merge(layer(options), ClusterStatus.layer).pipe(
    Layer.provideMerge(onWallClock(runner, systemClock()))
  )
}

/**
 * A client-only process was given a configuration it cannot run with (`layerClient`): nothing was started.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>("@parley/cluster/ClusterRuntime/ConfigInvalid")(
  "ConfigInvalid",
  { option: Schema.String, description: Schema.String }
) {
  /**
   * @since 0.1.0
   */
  override get message(): string {
    return `${this.option}: ${this.description}`
  }
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface ClientOptions {
  /**
   * The engine that answers reads and creates sessions (its trees' idle times, its snapshots). It runs no work:
   * `runsWork` and `leaseTtl` play no part.
   */
  readonly engine?: Omit<Engine.Options, "runsWork" | "leaseTtl"> | undefined
  /**
   * The cluster's settings: `shardsPerGroup` must be the runners' (it says which shard a tree is in); the timings
   * (`refreshAssignmentsInterval`, `sendRetryInterval`) are this process's. No runner address: a client is no runner.
   */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
}

/** The client's configuration, checked: no runner address, a whole number of shards per group. */
const clientConfig = (
  config: Partial<ShardingConfig.ShardingConfig["Service"]> = {}
): Result.Result<Partial<ShardingConfig.ShardingConfig["Service"]>, ConfigInvalid> => {
  for (const option of ["runnerAddress", "runnerListenAddress"] as const) {
    const address: unknown = config[option]
    if (address !== undefined && !(Option.isOption(address) && Option.isNone(address))) {
      return Result.fail(
        new ConfigInvalid({
          option: `shardingConfig.${option}`,
          description: "a client-only process is no runner and has no runner address (a runner: layerSocket)"
        })
      )
    }
  }
  const shards = config.shardsPerGroup
  if (shards !== undefined && !(Number.isSafeInteger(shards) && shards >= 1)) {
    return Result.fail(
      new ConfigInvalid({
        option: "shardingConfig.shardsPerGroup",
        description: `must be a whole number of at least 1, the runners' own (got ${String(shards)})`
      })
    )
  }
  return Result.succeed({ ...config, runnerAddress: Option.none(), runnerListenAddress: Option.none() })
}

/**
 * A process of a cluster over sockets that is **no runner**: a web front, a worker that answers approvals, a CLI host.
 * Its `Transport` is the runners': every command that changes a tree (send, answer, cancel, revoke a grant) goes to
 * the runner that holds the tree's shard through the `Tree` entity's client, resent while it does not get through;
 * creating a session and every read (sessions, turns, events, grants, open callbacks) are answered here from the log,
 * as a runner that does not hold the tree answers them. It registers no runner, holds no shard, takes no lease, runs
 * no turn and no wake-up singleton: `@effect/cluster`'s client-only `Sharding` (`SocketRunner.layerClientOnly`) reads
 * the runners from the `SqlClient`'s database (`SqlRunnerStorage`) and computes where each shard is, as they do.
 *
 * It needs the runners' models, connectors and runtime tools (a session it creates is validated and its runtime tools
 * marked as a runner would; it runs none of them), and fails with `ConfigInvalid` before starting anything when given
 * a runner address or a shard count that is not a whole number. Start it after the first runner of a new database
 * (that one creates the `cluster_` tables). Its `Sharding` and `ClusterStatus` (the runners; no shard held here) are
 * provided too.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerClient = (
  options: ClientOptions = {}
): Layer.Layer<
  Transport | Sharding.Sharding | ClusterStatus.ClusterStatus,
  ConfigInvalid | SqlError.SqlError,
  SessionStore | Models | Connectors | RuntimeTools | SqlClient.SqlClient
> =>
  Layer.unwrap(Effect.map(Effect.fromResult(clientConfig(options.shardingConfig)), (shardingConfig) => {
    const sharding = SocketRunner.layerClientOnly.pipe(
      Layer.provide(NodeClusterSocket.layerClientProtocol),
      Layer.provideMerge(Layer.merge(MessageStorage.layerNoop, SqlRunnerStorage.layer)),
      Layer.provideMerge(ShardingConfig.layer(shardingConfig)),
      Layer.provide(RpcSerialization.layerSchemaBinary())
    )
    const transport = Layer.effect(
      Transport,
      Effect.gen(function*() {
        const store = yield* storeServices
        // Placed on no tree, running no work: it claims nothing and loads a tree only to answer a read (the commands
        // go to the runners).
        const engine = yield* Engine.makePlaced({ ...options.engine, runsWork: false })
        const client = yield* Tree.client
        return ClusterTransport.make({ local: engine.transport, store, client, wallClock: systemClock() })
      })
    )
    return Layer.merge(transport, ClusterStatus.layer).pipe(
      Layer.provideMerge(onWallClock(sharding, systemClock()))
    )
  }))
