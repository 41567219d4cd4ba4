/**
 * The SDK's `OAuthClientProvider` for one session tree, kept in the runtime's `Credentials` (encrypted in the
 * session store): the client registration, the tokens, the PKCE verifier and `state` of a sign-in in progress, the
 * discovery results. The SDK does the protocol (protected resource metadata, authorization server discovery, dynamic
 * registration, PKCE, the code exchange, refreshes); this only keeps what it hands over, and catches the
 * authorization URL it would redirect a browser to — the sign-in callback carries it instead.
 */
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"
import type { SessionId } from "@parley/core/Ids"
import type * as Credentials from "@parley/runtime/Credentials"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Crypto from "node:crypto"

/** What a connector's sign-in keeps for a tree (one encrypted credential). */
export interface Stored {
  readonly client?: OAuthClientInformationMixed | undefined
  readonly tokens?: OAuthTokens | undefined
  readonly verifier?: string | undefined
  readonly state?: string | undefined
  readonly discovery?: OAuthDiscoveryState | undefined
}

export interface Options {
  /** Where the authorization server sends the person back with the code (`?code=…&state=…`). */
  readonly redirectUrl: string
  readonly clientName?: string | undefined
  /** The scopes to ask for when the server does not say (`WWW-Authenticate` or its resource metadata). */
  readonly scopes?: ReadonlyArray<string> | undefined
  /** A client registered beforehand; without it the SDK registers one dynamically (RFC 7591). */
  readonly clientId?: string | undefined
  readonly clientSecret?: string | undefined
}

/** A provider for one tree, and the authorization URL it was last asked to send a person to. */
export interface TreeProvider {
  readonly provider: OAuthClientProvider
  readonly authorizationUrl: () => URL | undefined
  readonly stored: () => Promise<Stored>
}

export const make = (
  source: string,
  options: Options,
  credentials: Credentials.Service,
  run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
) =>
(treeId: SessionId): TreeProvider => {
  const name = `connector:${source}`
  let authorizationUrl: URL | undefined = undefined
  const stored = (): Promise<Stored> =>
    run(Effect.map(credentials.get(treeId, name), (value) => Option.getOrElse(value, () => ({})) as Stored))
  const update = (change: (stored: Stored) => Stored) =>
    run(
      Effect.flatMap(
        Effect.map(credentials.get(treeId, name), (value) => Option.getOrElse(value, () => ({})) as Stored),
        (current) => credentials.set(treeId, name, change(current))
      )
    )
  const preRegistered: OAuthClientInformationMixed | undefined = options.clientId === undefined
    ? undefined
    : {
      client_id: options.clientId,
      ...(options.clientSecret === undefined ? {} : { client_secret: options.clientSecret })
    }

  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return options.redirectUrl
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: options.clientName ?? "Parley",
        redirect_uris: [options.redirectUrl],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: options.clientSecret === undefined ? "none" : "client_secret_post",
        ...(options.scopes === undefined ? {} : { scope: options.scopes.join(" ") })
      }
    },
    state: async () => {
      const state = Crypto.randomBytes(16).toString("base64url")
      await update((current) => ({ ...current, state }))
      return state
    },
    clientInformation: async () => (await stored()).client ?? preRegistered,
    saveClientInformation: (client) => update((current) => ({ ...current, client })),
    tokens: async () => (await stored()).tokens,
    saveTokens: (tokens) => update((current) => ({ ...current, tokens, verifier: undefined, state: undefined })),
    redirectToAuthorization: (url) => {
      authorizationUrl = url
    },
    saveCodeVerifier: (verifier) => update((current) => ({ ...current, verifier })),
    codeVerifier: async () => {
      const verifier = (await stored()).verifier
      if (verifier === undefined) throw new Error(`no sign-in to ${source} is in progress for this session`)
      return verifier
    },
    invalidateCredentials: (scope) =>
      update((current) => {
        switch (scope) {
          case "all":
            return {}
          case "client":
            return { ...current, client: undefined }
          case "tokens":
            return { ...current, tokens: undefined }
          case "verifier":
            return { ...current, verifier: undefined }
          case "discovery":
            return { ...current, discovery: undefined }
        }
      }),
    saveDiscoveryState: (discovery) => update((current) => ({ ...current, discovery })),
    discoveryState: async () => (await stored()).discovery
  }
  return {
    provider,
    // Taken once: a later 401 that asks for no new authorization does not reuse this one.
    authorizationUrl: () => {
      const url = authorizationUrl
      authorizationUrl = undefined
      return url
    },
    stored
  }
}
