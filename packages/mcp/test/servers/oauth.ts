/**
 * The mail server behind OAuth on 127.0.0.1, with the SDK's own server-side auth helpers: `mcpAuthRouter` is the
 * authorization server (metadata, dynamic registration, `/authorize`, `/token` with PKCE checks, refresh) and
 * publishes the protected resource metadata; `requireBearerAuth` guards `tools/call` (listing the tools needs no
 * sign-in). The provider below only keeps clients, codes and tokens in maps, and approves every authorization at once
 * (a person who clicked "Allow"): `/authorize` redirects to the client's redirect URL with a code.
 *
 * Test hooks: `expireAccessTokens` (the next call gets a 401 and the client refreshes), `revokeRefreshTokens` (the
 * refresh fails: a new sign-in), `counts` (codes issued, tokens issued, refreshes).
 */
import type { OAuthRegisteredClientsStore } from "@modelcontextprotocol/sdk/server/auth/clients.js"
import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js"
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js"
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js"
import { getOAuthProtectedResourceMetadataUrl, mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js"
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import type { Scope } from "effect"
import { Effect } from "effect"
import express from "express"
import { randomBytes, randomUUID } from "node:crypto"
import type * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { mailServer, type Observed, observed } from "./mail.js"

const token = () => randomBytes(16).toString("hex")

class Provider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>()
  readonly codes = new Map<string, { client: string; params: AuthorizationParams }>()
  readonly access = new Map<string, AuthInfo>()
  readonly refresh = new Map<string, { client: string; scopes: Array<string> }>()
  readonly counts = { codes: 0, tokens: 0, refreshes: 0 }

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: (id) => this.clients.get(id),
      registerClient: (client) => {
        const full = { ...client, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) }
        this.clients.set(full.client_id, full)
        return full
      }
    }
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: express.Response) {
    const code = token()
    this.codes.set(code, { client: client.client_id, params })
    this.counts.codes++
    const target = new URL(params.redirectUri)
    target.searchParams.set("code", code)
    if (params.state !== undefined) target.searchParams.set("state", params.state)
    res.redirect(302, target.toString())
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string) {
    const found = this.codes.get(code)
    if (found === undefined) throw new InvalidGrantError("unknown authorization code")
    return found.params.codeChallenge
  }

  private issue(client: string, scopes: Array<string>): OAuthTokens {
    const access = token()
    const refresh = token()
    this.access.set(access, {
      token: access,
      clientId: client,
      scopes,
      expiresAt: Math.floor(Date.now() / 1000) + 3600
    })
    this.refresh.set(refresh, { client, scopes })
    this.counts.tokens++
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: 3600,
      refresh_token: refresh,
      scope: scopes.join(" ")
    }
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string) {
    const found = this.codes.get(code)
    if (found === undefined || found.client !== client.client_id) throw new InvalidGrantError("unknown code")
    this.codes.delete(code)
    return this.issue(client.client_id, found.params.scopes ?? [])
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string) {
    const found = this.refresh.get(refreshToken)
    if (found === undefined || found.client !== client.client_id) throw new InvalidGrantError("unknown refresh token")
    this.refresh.delete(refreshToken)
    this.counts.refreshes++
    return this.issue(client.client_id, found.scopes)
  }

  async verifyAccessToken(accessToken: string) {
    const info = this.access.get(accessToken)
    if (info === undefined) throw new InvalidTokenError("unknown token")
    return info
  }
}

export interface OAuthMail {
  readonly url: string
  readonly seen: Observed
  readonly counts: { readonly codes: number; readonly tokens: number; readonly refreshes: number }
  /** The MCP sessions the clients opened (`initialize` requests). */
  readonly initializes: () => number
  /** The access tokens issued so far. */
  readonly accessTokens: () => ReadonlyArray<string>
  readonly expireAccessTokens: () => void
  readonly revokeRefreshTokens: () => void
}

export const serveOAuthMail: Effect.Effect<OAuthMail, never, Scope.Scope> = Effect.gen(function*() {
  const seen = observed()
  const provider = new Provider()
  const app = express()
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  let base: URL | undefined = undefined
  const http = yield* Effect.acquireRelease(
    Effect.callback<Http.Server>((resume) => {
      const server: Http.Server = app.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  base = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}`)
  const mcpUrl = new URL("/mcp", base)
  app.use(mcpAuthRouter({
    provider,
    issuerUrl: base,
    resourceServerUrl: mcpUrl,
    scopesSupported: ["mail.read", "mail.send"],
    resourceName: "Mail",
    tokenOptions: { rateLimit: false },
    authorizationOptions: { rateLimit: false },
    clientRegistrationOptions: { rateLimit: false }
  }))
  const bearer = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl)
  })
  let initializes = 0
  app.all("/mcp", express.json(), (req, res, next) => {
    if (req.method === "POST" && req.body?.method === "initialize") initializes++
    // Listing needs no sign-in; a call does.
    if (req.method === "POST" && req.body?.method === "tools/call") return bearer(req, res, next)
    next()
  }, (req, res) => {
    const id = req.headers["mcp-session-id"]
    const known = typeof id === "string" ? sessions.get(id) : undefined
    if (known !== undefined) return void known.handleRequest(req, res, req.body)
    const server = mailServer(seen, { crash: () => http.closeAllConnections() })
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, transport)
    })
    void server.connect(transport).then(() => transport.handleRequest(req, res, req.body))
  })
  return {
    url: mcpUrl.toString(),
    seen,
    counts: provider.counts,
    initializes: () => initializes,
    accessTokens: () => [...provider.access.keys()],
    expireAccessTokens: () => {
      for (const [key, info] of provider.access) provider.access.set(key, { ...info, expiresAt: 1 })
    },
    revokeRefreshTokens: () => provider.refresh.clear()
  }
})
