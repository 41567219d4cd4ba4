/**
 * `parley cluster status`: the cluster as the server asked sees it (`GET /cluster/status` of a `parley serve
 * --cluster` server): its runners, how many shards each is assigned, and the asked runner's shards and trees.
 */
import * as ClusterApi from "@parley/cluster/ClusterApi"
import * as ClusterStatus from "@parley/cluster/ClusterStatus"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Schema from "effect/Schema"
import * as Connection from "./connection.js"
import { CliError, explain } from "./errors.js"
import * as Format from "./format.js"

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

const encodeStatus = Schema.encodeEffect(ClusterStatus.Status)

/** The status, or the one line that says why not (a server that is no runner answers 404). */
const fetchStatus = (connection: Connection.Connection) =>
  HttpApiClient.make(ClusterApi.Api, {
    baseUrl: connection.url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(connection.key))
  }).pipe(
    Effect.flatMap((client) => client.cluster.status()),
    Effect.provide(FetchHttpClient.layer),
    Effect.mapError((error) => {
      if (HttpClientError.isHttpClientError(error) && error.response?.status === 404) {
        return new CliError({
          message: `the server at ${connection.url} is not a cluster runner (no /cluster/status)`,
          hint: "ask a server started with `parley serve --cluster host:port --database postgres://…`",
          exitCode: 1
        })
      }
      return explain(connection)(error)
    })
  )

const status = Command.make("status", {
  ...Connection.options,
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the status as JSON."), Flag.withDefault(false))
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const found = yield* fetchStatus(connection)
    if (given.json) {
      const encoded = yield* Effect.orDie(encodeStatus(found))
      return yield* Console.log(JSON.stringify(encoded, null, 2))
    }
    const total = found.groups.length * found.shardsPerGroup
    yield* Console.log(Format.table(
      ["RUNNER", "HEALTHY", "SHARDS"],
      found.runners.map((runner) => [
        runner.self ? `${runner.address} (asked)` : runner.address,
        runner.healthy ? "yes" : Format.red("no"),
        String(runner.shards)
      ])
    ))
    yield* Console.log("")
    yield* Console.log(
      `${count(found.runners.length, "runner")}, ${count(total, "shard")} (${
        found.groups.join(", ")
      }: ${found.shardsPerGroup} each)`
    )
    yield* Console.log(
      `${found.runner ?? "the server asked"} holds ${count(found.shardsHeld, "shard")} and ${
        count(found.trees, "tree")
      } in memory`
    )
  })).pipe(
    Command.withDescription("The cluster's runners, their shards, and the asked runner's trees."),
    Command.withExamples([{ command: "parley cluster status --url http://10.0.0.5:8787" }])
  )

/**
 * `parley cluster status`.
 */
export const command = Command.make("cluster").pipe(
  Command.withDescription("See a cluster of `parley serve --cluster` servers."),
  Command.withExamples([{ command: "parley cluster status" }]),
  Command.withSubcommands([status])
)
