/**
 * A process that is no runner (`ClusterRuntime.layerClient`) beside a runner of the same cluster on PostgreSQL — here
 * both in one program, as a web front and a worker would be on two machines. The client starts the session, sends
 * the message and answers the approval; the runner that holds the tree's shard runs the model and the tool. The
 * client's status lists the runner, not itself: it holds no shard and no tree.
 *
 * Run it (PostgreSQL: `bash scripts/postgres.sh`):
 * `PARLEY_DATABASE_URL=postgres://parley:parley@127.0.0.1:5432/parley_test npx tsx --conditions=@parley/source examples/cluster/client.ts`
 */
import { PgClient } from "@effect/sql-pg"
import { ClusterRuntime, ClusterStatus } from "@parley/cluster"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Console, Effect, Layer, Option, Redacted, References, Schema } from "effect"
import { RunnerAddress } from "effect/cluster"
import { describeState, isEntry } from "../shared/entry.js"

/** A tool the runtime runs, on the tree's runner; the policy asks before each call. */
const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, ({ product }) => Console.log(`(the runner looks up ${product})`).pipe(Effect.as({ price: "129 EUR" })))

const pricer = Agent.make({
  name: "pricer",
  model: "mistral-large-latest",
  instructions: "Look up the price, then answer in one sentence.",
  tools: [lookupPrice.spec],
  permissionMode: "ask"
})

/**
 * The cluster's settings, the same on every process (`shardsPerGroup` above all). The lock table instead of
 * PostgreSQL's advisory locks, which belong to the database: another cluster on it would take this one's shards.
 */
const shardingConfig = { shardsPerGroup: 30, shardLockDisableAdvisory: true } as const

/** What both processes need: the log and the cluster's tables in one database, and the same definitions. */
const services = (url: string, models: Models.Service) =>
  Layer.mergeAll(
    Layer.orDie(SqlStore.layerPg({ url, maxConnections: 4 })),
    PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }),
    Connectors.layerEmpty,
    RuntimeTools.layer(lookupPrice),
    Models.layer(models)
  )

/**
 * A runner listening on `port`: it holds shards and runs the turns of their trees. Its log shows warnings and worse
 * (the cluster's own info lines, its listen address first, would come between the walkthrough's).
 */
export const runner = (url: string, port: number, models: Models.Service) =>
  ClusterRuntime.layerSocket({
    shardingConfig: { ...shardingConfig, runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", port)) }
  }).pipe(Layer.provide([services(url, models), Layer.succeed(References.MinimumLogLevel, "Warn")]))

/** A client: no runner address, no shard; the same `Transport`. */
export const client = (url: string, models: Models.Service) =>
  ClusterRuntime.layerClient({ shardingConfig }).pipe(Layer.provide(services(url, models)))

/** Runs on the client: waits for a runner, then one turn, approved from here; then the client's view of the cluster. */
export const program = Effect.gen(function*() {
  let status = yield* ClusterStatus.get
  while (!status.runners.some((runner) => runner.healthy && runner.shards > 0)) {
    yield* Effect.sleep("200 millis")
    status = yield* ClusterStatus.get
  }
  const session = yield* Agent.startSession(pricer)
  const blocked = yield* Session.run(session, "What does the atlas cost?")
  if (blocked._tag !== "Blocked") return yield* Effect.die(new Error(`expected Blocked, got ${blocked._tag}`))
  yield* Console.log(`turn: ${describeState(blocked)}`)
  const turn = yield* Session.turn(session, blocked.turnId)
  yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
  yield* Console.log(`turn: ${describeState(yield* Turn.result(turn, { after: blocked }))}`)
  status = yield* ClusterStatus.get
  yield* Console.log(
    `runners: ${status.runners.length}, ${status.runners.filter((r) => r.self).length} of them this one`
  )
  yield* Console.log(`this client holds ${status.shardsHeld} shards and ${status.trees} tree(s) in memory`)
})

/** The model, scripted (offline): the runner calls it. */
export const scriptedModels = Effect.map(
  ScriptedModel.make([
    ScriptedModel.toolCall("lookup_price", { product: "atlas" }),
    ScriptedModel.text("The atlas costs 129 EUR.")
  ]),
  (model) => Models.single(model.languageModel)
)

if (isEntry(import.meta.url)) {
  const url = process.env.PARLEY_DATABASE_URL ?? "postgres://parley:parley@127.0.0.1:5432/parley_test"
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const models = yield* scriptedModels
    // The runner first: on a new database it creates the cluster's tables.
    yield* Layer.build(runner(url, Number(process.env.PARLEY_RUNNER_PORT ?? 34431), models))
    yield* program.pipe(Effect.provide(client(url, models)))
  })))
}
