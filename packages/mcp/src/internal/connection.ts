/**
 * One MCP server as a connector: a connection made with the official SDK's `Client` (made again when it was lost),
 * the server's tools (listed with `tools/list` at each connection and again on `notifications/tools/list_changed`),
 * and calls through `tools/call`, cancelled when the call's fiber is interrupted.
 */
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { SessionId } from "@parley/core/Ids"
import * as Connectors from "@parley/runtime/Connectors"
import type * as Credentials from "@parley/runtime/Credentials"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { McpConnectError } from "../McpError.js"
import * as OAuth from "./oauth.js"
import { resultOf, specOf } from "./tools.js"

/** How to reach the server: a new SDK transport for each connection, and what breaks a connection mid-call. */
export interface Options {
  readonly source: string
  readonly kind: "http" | "stdio"
  /**
   * A new transport; `broken` is called when a call's response stream broke (the server went away mid-call). With
   * `auth`, the transport signs its requests in for one tree.
   */
  readonly transport: (broken: (reason: string) => void, auth?: OAuthClientProvider) => Transport
  readonly askFirst: boolean
  readonly timeout: Duration.Duration
  /** OAuth sign-in (Streamable HTTP only): each tree gets its own connection, signed in with its own tokens. */
  readonly oauth?: {
    readonly options: OAuth.Options
    readonly url: URL
    readonly credentials: Credentials.Service
    /** How long a tree's connection stays open unused. */
    readonly idleTimeToLive?: Duration.Duration | undefined
  } | undefined
}

interface Connection {
  readonly client: Client
  /** Completed when the connection is lost: calls in flight end with its reason. */
  readonly lost: Deferred.Deferred<never, string>
}

/** A connection slot: the live connection (one is made at a time), or none until a call needs it. */
interface Link {
  readonly get: Effect.Effect<Connection, unknown>
  readonly drop: (connection: Connection, reason: string) => Effect.Effect<void>
  readonly current: () => Connection | undefined
  readonly signIn?: OAuth.TreeProvider | undefined
}

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The session the server knew is gone (it restarted, or expired it): a new connection, then the same request. */
const sessionGone = (error: unknown) => error instanceof StreamableHTTPError && error.code === 404

/** An error of the request itself (bad arguments, an unknown tool, a timeout): the connection stays. */
const requestError = (error: unknown) =>
  (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) || error instanceof UnauthorizedError

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
    const runPromise = yield* FiberSet.makeRuntimePromise<never>()
    let tools: ReadonlyArray<Connectors.ConnectorTool> = []
    let revision = 0
    const links = new Set<Link>()

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
        next.push({ spec, run: (args, context) => call(tool.name, args, context) })
      }
      tools = next
      revision++
    }

    /**
     * A connection slot. The shared one (`lists`) lists the tools at each connection and on `list_changed`; a tree's
     * (OAuth) signs its requests in with the tree's tokens.
     */
    const link = (lists: boolean, signIn?: OAuth.TreeProvider): Link => {
      const lock = Semaphore.makeUnsafe(1)
      let current: Connection | undefined = undefined
      const drop = (connection: Connection, reason: string) =>
        Effect.suspend(() => {
          if (current === connection) current = undefined
          return Deferred.fail(connection.lost, reason).pipe(
            Effect.andThen(Effect.promise(() => connection.client.close().catch(() => undefined)))
          )
        })
      const refresh = (connection: Connection) =>
        Effect.tryPromise({ try: () => listAll(connection.client), catch: (cause) => cause }).pipe(
          Effect.flatMap((listed) => Effect.sync(() => current === connection && setTools(listed))),
          Effect.catch((error) =>
            Effect.logWarning(`The ${source} MCP server's new tool list could not be read: ${describe(error)}`)
          )
        )
      const open = Effect.gen(function*() {
        const lost = yield* Deferred.make<never, string>()
        let connection: Connection | undefined = undefined
        const client = new Client({ name: "parley", version: "0.1.0" }, {
          ...(lists
            ? {
              listChanged: {
                tools: {
                  autoRefresh: false,
                  debounceMs: 0,
                  onChanged: () => {
                    if (connection !== undefined) runFork(refresh(connection))
                  }
                }
              }
            }
            : {})
        })
        const transport = options.transport((reason) => {
          if (connection !== undefined) runFork(drop(connection, reason))
        }, signIn?.provider)
        yield* Effect.tryPromise({ try: () => client.connect(transport), catch: (cause) => cause })
        connection = { client, lost }
        const made = connection
        client.onclose = () => runFork(drop(made, `the ${source} MCP server closed the connection`))
        if (lists) {
          const listed = yield* Effect.tryPromise({
            try: () => listAll(client),
            catch: (cause) => connectError("listTools", cause)
          }).pipe(Effect.tapError(() => drop(made, "its tools could not be listed")))
          setTools(listed)
        }
        current = made
        return made
      })
      const made: Link = {
        get: lock.withPermits(1)(Effect.suspend(() => current === undefined ? open : Effect.succeed(current))),
        drop,
        current: () => current,
        signIn
      }
      links.add(made)
      return made
    }

    const shared = link(true)
    const providers = options.oauth === undefined
      ? undefined
      : OAuth.make(source, options.oauth.options, options.oauth.credentials, runPromise)
    // A tree's connection (OAuth) while it is used, closed once idle for `idleTimeToLive`: its credentials stay in the
    // store, and its next call connects again. The busy count keeps a connection in use from being swept.
    const trees = new Map<string, { readonly link: Link; busy: number; lastUsed: number }>()
    const idle = Duration.toMillis(options.oauth?.idleTimeToLive ?? Duration.minutes(1))
    const withLink = <A, E>(treeId: SessionId, use: (slot: Link) => Effect.Effect<A, E>): Effect.Effect<A, E> => {
      if (providers === undefined) return use(shared)
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          let entry = trees.get(treeId)
          if (entry === undefined) {
            entry = { link: link(false, providers(treeId)), busy: 0, lastUsed: Date.now() }
            trees.set(treeId, entry)
          }
          entry.busy++
          return entry
        }),
        (entry) => use(entry.link),
        (entry) =>
          Effect.sync(() => {
            entry.busy--
            entry.lastUsed = Date.now()
          })
      )
    }
    const sweep = Effect.suspend(() => {
      const now = Date.now()
      const closing: Array<Effect.Effect<void>> = []
      for (const [treeId, entry] of trees) {
        if (entry.busy > 0 || now - entry.lastUsed < idle) continue
        trees.delete(treeId)
        links.delete(entry.link)
        const current = entry.link.current()
        if (current !== undefined) closing.push(entry.link.drop(current, "idle"))
      }
      return Effect.all(closing, { discard: true })
    })
    if (providers !== undefined) {
      yield* Effect.forkScoped(
        Effect.repeat(sweep, Schedule.spaced(Duration.millis(Math.max(10, Math.floor(idle / 2)))))
      )
    }

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

    /** The server asked for an authorization the tree does not have (or could not refresh): the call waits on it. */
    const signInRequired = (slot: Link) => {
      const url = slot.signIn?.authorizationUrl()
      if (url === undefined) return undefined
      const scope = url.searchParams.get("scope")
      return new Connectors.SignInRequired({
        authorizationUrl: url.toString(),
        scopes: scope === null || scope === "" ? [] : scope.split(" ")
      })
    }

    const call = (
      name: string,
      args: unknown,
      context: Connectors.CallContext
    ): Effect.Effect<unknown, string | Connectors.SignInRequired> =>
      withLink(context.treeId, (slot) =>
        slot.get.pipe(
          Effect.flatMap((first) =>
            request(first, name, args).pipe(
              Effect.catchIf(sessionGone, () =>
                // The server forgot the session: connect again and send the same call once more.
                slot.drop(first, `the ${source} MCP server ended the session`).pipe(
                  Effect.andThen(slot.get),
                  Effect.flatMap((again) => request(again, name, args))
                ))
            )
          ),
          Effect.catch((error): Effect.Effect<never, string | Connectors.SignInRequired> => {
            if (error instanceof UnauthorizedError) {
              const required = signInRequired(slot)
              if (required !== undefined) return Effect.fail(required)
            }
            // A lost connection is made again by the next call; an error of the request leaves it be.
            const current = slot.current()
            const reset = requestError(error) || current === undefined
              ? Effect.void
              : slot.drop(current, describe(error))
            return Effect.andThen(reset, Effect.fail(`The ${source} server could not run ${name}: ${describe(error)}`))
          }),
          Effect.flatMap((result: CallToolResult) => {
            const outcome = resultOf(result)
            if (!outcome.isFailure) return Effect.succeed(outcome.value)
            // The server's own tool error (`isError`): the model reads it as it came.
            return Effect.fail(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value))
          })
        ))

    /** The answer's credential: a code exchanged for tokens (the SDK's `auth`, with the tree's verifier), or tokens. */
    const completeSignIn = (treeId: SessionId, grant: Connectors.Grant): Effect.Effect<void, string> =>
      Effect.gen(function*() {
        if (options.oauth === undefined || providers === undefined) {
          return yield* Effect.fail(`${source} takes no credential`)
        }
        const oauth = options.oauth
        const tree = providers(treeId)
        if (grant.tokens !== undefined) {
          const tokens = grant.tokens
          return yield* Effect.tryPromise({
            try: () => Promise.resolve(tree.provider.saveTokens({ ...tokens })),
            catch: describe
          })
        }
        const code = grant.code
        if (code === undefined) return yield* Effect.fail("the grant has neither a code nor tokens")
        const expected = (yield* Effect.tryPromise({ try: tree.stored, catch: describe })).state
        if (grant.state !== undefined && expected !== undefined && grant.state !== expected) {
          return yield* Effect.fail("the state does not match the sign-in in progress")
        }
        yield* Effect.tryPromise({
          try: () => auth(tree.provider, { serverUrl: oauth.url, authorizationCode: code }),
          catch: describe
        })
      })

    yield* Effect.addFinalizer(() =>
      Effect.forEach(links, (slot) => {
        const current = slot.current()
        return current === undefined ? Effect.void : slot.drop(current, "closed")
      }, { discard: true })
    )
    yield* Effect.mapError(
      shared.get,
      (error) => error instanceof McpConnectError ? error : connectError("connect", error)
    )

    return {
      source,
      askFirst: options.askFirst,
      get tools() {
        return tools
      },
      revision: () => revision,
      ...(options.oauth === undefined ? {} : { completeSignIn })
    }
  })
