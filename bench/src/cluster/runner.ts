/**
 * A runner of the cluster bench: `ClusterRuntime.layerSocket` on 127.0.0.1 and a PostgreSQL schema, running the
 * approval loop's agent (`lookup_price`, run by the runtime after its approval) on a `ScriptedModel` brain; asked
 * about stock, the agent runs `check_stock`, which takes ten minutes (the resume phase's running trees).
 */
import { PgClient } from "@effect/sql-pg"
import { ClusterRuntime } from "@parley/cluster"
import { Agent } from "@parley/core"
import { Connectors, Models, RuntimeTools } from "@parley/runtime"
import { SqlStore } from "@parley/store-sql"
import { ScriptedModel } from "@parley/testing"
import { Tool } from "@parley/tools"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import type { LanguageModel } from "effect/ai"
import { RunnerAddress } from "effect/cluster"

export const lookupPrice = Tool.make("lookup_price", {
  description: "Price of one product.",
  parameters: { product: Schema.String },
  success: Schema.Struct({ price: Schema.String })
}, () => ({ price: "129 EUR" }))

export const checkStock = Tool.make("check_stock", {
  description: "Counts the stock of one product (slow).",
  parameters: { product: Schema.String },
  success: Schema.Struct({ count: Schema.Number })
}, () => Effect.as(Effect.sleep("10 minutes"), { count: 3 }))

/** The cluster's shards (one group). */
export const shardsPerGroup = 60

export const agent = Agent.make({
  name: "pricer",
  model: "scripted",
  instructions: "Look up the price, then answer in one sentence.",
  tools: [lookupPrice.spec, checkStock.spec],
  permissionMode: "ask"
})

export const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  if (results.some((result) => result.name === "lookup_price")) return ScriptedModel.text("The atlas costs 129 EUR.")
  if (results.some((result) => result.name === "check_stock")) return ScriptedModel.text("The stock count stopped.")
  return ScriptedModel.lastUserText(call)?.includes("stock") === true
    ? ScriptedModel.toolCall("check_stock", { product: "atlas" })
    : ScriptedModel.toolCall("lookup_price", { product: "atlas" })
}

export const runner = (options: {
  readonly url: string
  readonly port: number
  readonly model: LanguageModel.LanguageModel
}) =>
  ClusterRuntime.layerSocket({
    shardingConfig: {
      runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", options.port)),
      shardsPerGroup,
      // The lock table: PostgreSQL's advisory locks are per database, and other clusters may use the same one.
      shardLockDisableAdvisory: true,
      shardLockRefreshInterval: "1 second",
      shardLockExpiration: "8 seconds",
      refreshAssignmentsInterval: "500 millis",
      runnerHealthCheckInterval: "1 second"
    }
  }).pipe(
    Layer.provide([
      Layer.orDie(SqlStore.layerPg({ url: options.url, maxConnections: 8 })),
      PgClient.layer({ url: Redacted.make(options.url), maxConnections: 4 }),
      Connectors.layerEmpty,
      RuntimeTools.layer(lookupPrice, checkStock),
      Models.layer(Models.single(options.model))
    ]),
    Layer.orDie
  )
