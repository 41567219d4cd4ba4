/**
 * An MCP server as a Parley connector, with the official `@modelcontextprotocol/sdk` client: over Streamable HTTP
 * (`http`) or as a child process speaking stdio (`stdio`).
 *
 * - Its tools are the server's (`tools/list`, read again on `notifications/tools/list_changed`: the next model step
 *   sees the new list), with the stable ids `connector.<source>.<tool>`, their JSON Schemas, and their MCP annotations
 *   as Parley's `ToolAnnotations` (MCP's defaults where the server says nothing: a tool that does not declare
 *   `readOnlyHint` may be destructive), so `CallbackHandler.allowReadOnly` and the permission policy act on them.
 * - A call is a `tools/call`; a cancelled turn interrupts it, and the SDK sends `notifications/cancelled`. The result
 *   reaches the model: the structured content, or the text, or — with `isError` — a tool error.
 * - A connection that fails (the server died mid-call, refused, timed out) ends the call with a tool error the model
 *   reads; the next call connects again. A Streamable HTTP session the server forgot (`404`) is made again and the
 *   same call sent once more.
 *
 * The connection is made when the layer is built: a server that cannot be reached then fails the layer with
 * `McpConnectError`.
 *
 * @example
 * ```ts
 * import { McpConnector } from "@parley/mcp"
 * import { Connectors } from "@parley/runtime"
 *
 * const ConnectorsLive = Connectors.layerEffect([
 *   McpConnector.http({ source: "mail", url: "http://127.0.0.1:3001/mcp" }),
 *   McpConnector.stdio({ source: "files", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] })
 * ])
 * ```
 *
 * @since 0.1.0
 */
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type * as Connectors from "@parley/runtime/Connectors"
import * as Credentials from "@parley/runtime/Credentials"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/connection.js"
import { watchedFetch } from "./internal/fetch.js"
import type { McpConnectError } from "./McpError.js"

/**
 * What every MCP connector takes.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CommonOptions {
  /** The connector's name: agents declare it (`connectors: ["mail"]`), tool ids use it (`connector.mail.<tool>`). */
  readonly source: string
  /**
   * Whether a session asks the user to connect the source (an `OpenSignIn` answered by id) before its first call.
   * Default `false`: the server's tools are called at once.
   */
  readonly askFirst?: boolean | undefined
  /** How long a call may take before it ends with a tool error. Default: 60 seconds (the SDK's). */
  readonly timeout?: Duration.Input | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface HttpOptions extends CommonOptions {
  /** The server's Streamable HTTP endpoint (`http://127.0.0.1:3001/mcp`). */
  readonly url: string | URL
  /** Headers sent with every request (an API key the server expects). */
  readonly headers?: Record<string, string> | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface StdioOptions extends CommonOptions {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  /** The child's environment. Default: the SDK's safe subset of this process's (`PATH`, `HOME`, …). */
  readonly env?: Record<string, string> | undefined
  readonly cwd?: string | undefined
  /** Where the child's stderr goes. Default `"inherit"` (this process's stderr). */
  readonly stderr?: "inherit" | "ignore" | undefined
}

const common = (options: CommonOptions) => ({
  source: options.source,
  askFirst: options.askFirst ?? false,
  timeout: Duration.fromInputUnsafe(options.timeout ?? "60 seconds")
})

/**
 * OAuth sign-in to an MCP server that asks for one (MCP authorization: a `401` with its protected resource metadata,
 * then the authorization server's discovery, dynamic client registration and PKCE, all done by the SDK).
 *
 * @since 0.1.0
 * @category Models
 */
export interface OAuthOptions {
  /**
   * Where the authorization server sends the person back with the code (`?code=…&state=…`): a page of your app that
   * answers the sign-in with `SignInGrant({ id, code, state })`, or shows the code to paste.
   */
  readonly redirectUrl: string
  /** The client's name at the authorization server (dynamic registration). Default `"Parley"`. */
  readonly clientName?: string | undefined
  /** Scopes to ask for when the server names none. */
  readonly scopes?: ReadonlyArray<string> | undefined
  /** A client registered beforehand (else the SDK registers one per session tree). */
  readonly clientId?: string | undefined
  readonly clientSecret?: string | undefined
  /**
   * How long a session tree's connection stays open unused (each tree signs in with its own tokens, on its own
   * connection). Its next call connects again, with the tokens kept in the store. Default: 1 minute.
   */
  readonly idleTimeToLive?: Duration.Input | undefined
}

const httpTransport =
  (options: HttpOptions) => (broken: (reason: string) => void, authProvider?: OAuthClientProvider) =>
    new StreamableHTTPClientTransport(new URL(options.url), {
      fetch: watchedFetch(broken),
      ...(authProvider === undefined ? {} : { authProvider }),
      ...(options.headers === undefined ? {} : { requestInit: { headers: options.headers } })
    })

/**
 * A connector for the MCP server at `url`, over Streamable HTTP. The connection lives as long as the scope.
 *
 * With `oauth`, each session tree signs in for itself: a call the server answers with `401` opens an `OpenSignIn`
 * whose request carries the authorization URL and scopes; the answer's code (`SignInGrant`) is exchanged for tokens,
 * kept encrypted in the session store (`Credentials`, `PARLEY_SECRET_KEY`), and the same call runs again. An expired
 * access token is refreshed without asking; a refresh that fails opens a new sign-in. The tools are listed without
 * signing in (a server that refuses even that fails the layer with `McpConnectError`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export function http(
  options: HttpOptions & { readonly oauth: OAuthOptions }
): Effect.Effect<Connectors.Connector, McpConnectError, Scope.Scope | Credentials.Credentials>
export function http(options: HttpOptions): Effect.Effect<Connectors.Connector, McpConnectError, Scope.Scope>
export function http(
  options: HttpOptions & { readonly oauth?: OAuthOptions | undefined }
): Effect.Effect<Connectors.Connector, McpConnectError, Scope.Scope | Credentials.Credentials> {
  const oauth = options.oauth
  if (oauth === undefined) {
    return internal.make({ ...common(options), kind: "http", transport: httpTransport(options) })
  }
  return Effect.flatMap(Credentials.Credentials, (credentials) =>
    internal.make({
      ...common(options),
      kind: "http",
      transport: httpTransport(options),
      oauth: {
        options: oauth,
        url: new URL(options.url),
        credentials,
        idleTimeToLive: Duration.fromInputUnsafe(oauth.idleTimeToLive ?? "1 minute")
      }
    }))
}

/**
 * A connector for the MCP server that `command` starts, over its stdin and stdout. The child process lives as long as
 * the scope; a child that died is started again by the next call.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const stdio = (options: StdioOptions): Effect.Effect<Connectors.Connector, McpConnectError, Scope.Scope> =>
  internal.make({
    ...common(options),
    kind: "stdio",
    transport: () =>
      new StdioClientTransport({
        command: options.command,
        args: [...(options.args ?? [])],
        stderr: options.stderr ?? "inherit",
        ...(options.env === undefined ? {} : { env: options.env }),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd })
      })
  })
