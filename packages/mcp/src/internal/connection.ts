/**
 * One MCP server as a connector: a connection made with the official SDK's `Client` (made again when it was lost),
 * the server's tools (listed with `tools/list` at each connection and again on `notifications/tools/list_changed`),
 * and calls through `tools/call`, cancelled when the call's fiber is interrupted.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type * as Connectors from "@parley/runtime/Connectors"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import { McpConnectError } from "../McpError.js"
import { resultOf, specOf } from "./tools.js"

/** How to reach the server: a new SDK transport for each connection, and what breaks a connection mid-call. */
export interface Options {
  readonly source: string
  readonly kind: "http" | "stdio"
  /** A new transport; `broken` is called when a call's response stream broke (the server went away mid-call). */
  readonly transport: (broken: (reason: string) => void) => Transport
  readonly askFirst: boolean
  readonly timeout: Duration.Duration
}

interface Connection {
  readonly client: Client
  /** Completed when the connection is lost: calls in flight end with its reason. */
  readonly lost: Deferred.Deferred<never, string>
}

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The session the server knew is gone (it restarted, or expired it): a new connection, then the same request. */
const sessionGone = (error: unknown) => error instanceof StreamableHTTPError && error.code === 404

/** An error of the request itself (bad arguments, an unknown tool, a timeout): the connection stays. */
const requestError = (error: unknown) => error instanceof McpError && error.code !== ErrorCode.ConnectionClosed

const listAll = async (client: Client): Promise<ReadonlyArray<Tool>> => {
  const tools: Array<Tool> = []
  let cursor: string | undefined = undefined
  do {
    const page: Awaited<ReturnType<Client["listTools"]>> = await client.listTools(
      cursor === undefined ? undefined : { cursor }
    )
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return tools
}

export const make = (options: Options): Effect.Effect<Connectors.Connector, McpConnectError, Scope.Scope> =>
  Effect.gen(function*() {
    const { source } = options
    const runFork = yield* FiberSet.makeRuntime<never>()
    const lock = yield* Effect.makeSemaphore(1)
    let current: Connection | undefined = undefined
    let tools: ReadonlyArray<Connectors.ConnectorTool> = []
    let revision = 0

    const connectError = (method: string, cause: unknown) =>
      new McpConnectError({
        module: "McpConnector",
        method,
        source,
        description: `could not ${method === "listTools" ? "list the tools of" : "connect to"} the ${source} MCP ` +
          `server: ${describe(cause)}`,
        cause
      })

    const setTools = (listed: ReadonlyArray<Tool>) => {
      const seen = new Set<string>()
      const next: Array<Connectors.ConnectorTool> = []
      for (const tool of listed) {
        const spec = specOf(source, tool)
        // Two MCP names that differ only in characters a tool id cannot hold: the first one keeps the name.
        if (seen.has(spec.name)) continue
        seen.add(spec.name)
        next.push({ spec, run: (args) => call(tool.name, args) })
      }
      tools = next
      revision++
    }

    const drop = (connection: Connection, reason: string) =>
      Effect.suspend(() => {
        if (current === connection) current = undefined
        return Deferred.fail(connection.lost, reason).pipe(
          Effect.zipRight(Effect.promise(() => connection.client.close().catch(() => undefined)))
        )
      })

    const refresh = (connection: Connection) =>
      Effect.tryPromise(() => listAll(connection.client)).pipe(
        Effect.flatMap((listed) => Effect.sync(() => current === connection && setTools(listed))),
        Effect.catchAll((error) =>
          Effect.logWarning(`The ${source} MCP server's new tool list could not be read: ${describe(error)}`)
        )
      )

    const open: Effect.Effect<Connection, McpConnectError> = Effect.gen(function*() {
      const lost = yield* Deferred.make<never, string>()
      let connection: Connection | undefined = undefined
      const client = new Client({ name: "parley", version: "0.1.0" }, {
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => {
              if (connection !== undefined) runFork(refresh(connection))
            }
          }
        }
      })
      const transport = options.transport((reason) => {
        if (connection !== undefined) runFork(drop(connection, reason))
      })
      yield* Effect.tryPromise({
        try: () => client.connect(transport),
        catch: (cause) => connectError("connect", cause)
      })
      connection = { client, lost }
      const made = connection
      client.onclose = () => runFork(drop(made, `the ${source} MCP server closed the connection`))
      const listed = yield* Effect.tryPromise({
        try: () => listAll(client),
        catch: (cause) => connectError("listTools", cause)
      }).pipe(Effect.tapError(() => drop(made, "its tools could not be listed")))
      current = made
      setTools(listed)
      return made
    })

    /** The live connection, or a new one (one connection is made at a time). */
    const connection = lock.withPermits(1)(Effect.suspend(() => current === undefined ? open : Effect.succeed(current)))

    const request = (connection: Connection, name: string, args: unknown) =>
      Effect.raceFirst(
        Effect.tryPromise({
          try: (signal): Promise<CallToolResult> =>
            connection.client.callTool(
              { name, arguments: (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown> },
              undefined,
              { signal, timeout: Duration.toMillis(options.timeout) }
            ) as Promise<CallToolResult>,
          catch: (error) => error
        }),
        Effect.mapError(Deferred.await(connection.lost), (reason): unknown => new Error(reason))
      )

    const call = (name: string, args: unknown): Effect.Effect<unknown, string> =>
      connection.pipe(
        Effect.flatMap((first) =>
          request(first, name, args).pipe(
            Effect.catchIf(sessionGone, () =>
              // The server forgot the session: connect again and send the same call once more.
              drop(first, `the ${source} MCP server ended the session`).pipe(
                Effect.zipRight(connection),
                Effect.flatMap((again) => request(again, name, args))
              ))
          )
        ),
        Effect.catchAll((error) => {
          // A lost connection is made again by the next call; an error of the request leaves it be.
          const reset = requestError(error) || current === undefined ? Effect.void : drop(current, describe(error))
          return Effect.zipRight(reset, Effect.fail(`The ${source} server could not run ${name}: ${describe(error)}`))
        }),
        Effect.flatMap((result) => {
          const outcome = resultOf(result)
          if (!outcome.isFailure) return Effect.succeed(outcome.value)
          // The server's own tool error (`isError`): the model reads it as it came.
          return Effect.fail(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value))
        })
      )

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => current === undefined ? Effect.void : drop(current, "closed"))
    )
    yield* connection

    return {
      source,
      askFirst: options.askFirst,
      get tools() {
        return tools
      },
      revision: () => revision
    }
  })
