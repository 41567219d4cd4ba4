/**
 * `@parley/cluster` in one process (`ClusterRuntime.layerSingle`): the session's tree is a `Tree` entity of an
 * in-memory cluster, its log in a SQLite file. The program is the same as with `LocalTransport`: the turn blocks on
 * an approval, the program answers it by id (the answer travels to the tree's entity, whose placed engine runs the
 * tool), and the turn completes; then the cluster's status (`ClusterStatus.get`). A deployment swaps the one layer for `ClusterRuntime.layerSocket` on each runner,
 * with `SqlStore.layerPg` (see packages/cluster/README.md).
 *
 * Run it: `npx tsx --conditions=@parley/source examples/cluster/single.ts`
 */
import { ClusterRuntime, ClusterStatus } from "@parley/cluster"
import { Agent, Answer, Session, Turn } from "@parley/core"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Console, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describeState, isEntry } from "../shared/entry.js"

/** A tool the runtime runs (on the tree's runner); the policy asks before each call. */
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

export const program = Effect.gen(function*() {
  const session = yield* Agent.startSession(pricer)
  const blocked = yield* Session.run(session, "What does the atlas cost?")
  if (blocked._tag !== "Blocked") return yield* Effect.die(new Error(`expected Blocked, got ${blocked._tag}`))
  yield* Console.log(`turn: ${describeState(blocked)}`)
  const turn = yield* Session.turn(session, blocked.turnId)
  yield* Turn.answer(turn, blocked.callbacks[0].id, new Answer.AllowApproval())
  yield* Console.log(`turn: ${describeState(yield* Turn.result(turn, { after: blocked }))}`)
  // What `GET /cluster/status` of a ClusterServer answers: the runners, their shards, this runner's trees.
  const status = yield* ClusterStatus.get
  for (const runner of status.runners) {
    yield* Console.log(`runner ${runner.address}: ${runner.shards} shards assigned${runner.self ? " (this one)" : ""}`)
  }
  yield* Console.log(`this runner holds ${status.shardsHeld} shards and ${status.trees} tree(s) in memory`)
})

/** The runtime: a cluster of one process, the log in `filename`, the model scripted (offline). */
export const runtime = (filename: string) =>
  ClusterRuntime.layerSingle().pipe(
    Layer.provide([
      Layer.orDie(SqlStore.layerSqlite({ filename })),
      Connectors.layerEmpty,
      RuntimeTools.layer(lookupPrice),
      Layer.unwrap(Effect.map(
        ScriptedModel.make([
          ScriptedModel.toolCall("lookup_price", { product: "atlas" }),
          ScriptedModel.text("The atlas costs 129 EUR.")
        ]),
        (model) => Models.layer(Models.single(model.languageModel))
      ))
    ])
  )

if (isEntry(import.meta.url)) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "parley-cluster-"))
  Effect.runPromise(program.pipe(Effect.provide(runtime(path.join(directory, "sessions.db"))))).finally(() =>
    fs.rmSync(directory, { recursive: true, force: true })
  )
}
