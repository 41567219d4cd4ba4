/**
 * Who or what decided a callback: the `answeredBy` of every `CallbackResolved` that carries an answer, so an operator
 * reads from the log alone who said yes to each call.
 *
 * - `Handler { name }`: a `CallbackHandler` answered while a run waited (the handler's name, or its layer's);
 * - `Client { label? }`: a program answered by id (`Turn.answer`, `Inbox.answer`; it may pass a label: a user name,
 *   a ticket);
 * - `Grant { id }`: a remembered grant decided the call without asking (see `ApprovalGranted`);
 * - `Policy { rule }`: the permission policy decided a call without asking (on its `ToolCallStarted`'s `decidedBy`);
 * - `ApiKey { tenant, keyId }`: an answer posted to the server with an API key;
 * - `Link { tenant, linkId, person? }`: an answer confirmed through one of the server's answer links (no key: the
 *   link is the capability; `person` is whom the link was made for, when it was made for someone).
 *
 * @example
 * ```ts
 * import { Principal } from "@parley/core"
 *
 * const person = new Principal.Client({ label: "alice@example.com" })
 * const handler = new Principal.Handler({ name: "approveReads" })
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A `CallbackHandler` answered (named by the handler record, its `named` wrapper, or the layer).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Handler extends Schema.TaggedClass<Handler>("@parley/core/Principal/Handler")("Handler", {
  name: Schema.String
}) {}

/**
 * A program answered by id; `label` is whatever it passed to say who (none: an unlabelled client).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Client extends Schema.TaggedClass<Client>("@parley/core/Principal/Client")("Client", {
  label: Schema.optional(Schema.String),
  /** The roles a trusted caller gives (an in-process program; over HTTP, only the key's roles count). */
  roles: Schema.optional(Schema.Array(Schema.String))
}) {}

/**
 * A remembered grant decided: its id (`grant_` and 20 random hex digits, from its `ApprovalGranted` event).
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Grant extends Schema.TaggedClass<Grant>("@parley/core/Principal/Grant")("Grant", {
  id: Schema.String
}) {}

/**
 * The permission policy decided: the rule that matched and its decision (`rules[<index>] <pattern>: <decision>`) or
 * the default (`default: <decision>`), e.g. `rules[0] client.get_*: allow`, `default: deny`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Policy extends Schema.TaggedClass<Policy>("@parley/core/Principal/Policy")("Policy", {
  rule: Schema.String
}) {}

/**
 * The server took the answer from a request authenticated by this API key of this tenant. `onBehalfOf` is what the
 * client said about who answered (a handler's name or a label, sent with the request): the key is what the server
 * checked, the claim is the client's word.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ApiKey extends Schema.TaggedClass<ApiKey>("@parley/core/Principal/ApiKey")("ApiKey", {
  tenant: Schema.String,
  keyId: Schema.String,
  /** The key's roles, from the server's configuration (what `approvers` checks; a claim in `onBehalfOf` does not count). */
  roles: Schema.optional(Schema.Array(Schema.String)),
  onBehalfOf: Schema.optional(Schema.Union([Handler, Client]))
}) {}

/**
 * The server took the answer from one of its answer links: `linkId` names the link (never the link itself, which is
 * the capability), `person` whom it was made for (none: anyone holding it), `tenant` the tenant that made it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Link extends Schema.TaggedClass<Link>("@parley/core/Principal/Link")("Link", {
  tenant: Schema.String,
  linkId: Schema.String,
  person: Schema.optional(Schema.String)
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export type Principal = Handler | Client | Grant | Policy | ApiKey | Link

/**
 * @since 0.1.0
 * @category Schemas
 */
export const Principal: Schema.Union<
  readonly [typeof Handler, typeof Client, typeof Grant, typeof Policy, typeof ApiKey, typeof Link]
> = Schema.Union([Handler, Client, Grant, Policy, ApiKey, Link])

/**
 * One line for logs and narrations: `approveReads`, `by id`, `by id (alice)`, `grant grant_3e0f…`, `policy rules[0]
 * client.*: allow`, `key k1 of acme`, `approveReads (key k1 of acme)`, `alice (link lnk_… of acme)`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describe = (principal: Principal): string => {
  switch (principal._tag) {
    case "Handler":
      return principal.name
    case "Client":
      return principal.label === undefined ? "by id" : `by id (${principal.label})`
    case "Grant":
      return `grant ${principal.id}`
    case "Policy":
      return `policy ${principal.rule}`
    case "ApiKey":
      return principal.onBehalfOf === undefined
        ? `key ${principal.keyId} of ${principal.tenant}`
        : `${describe(principal.onBehalfOf)} (key ${principal.keyId} of ${principal.tenant})`
    case "Link":
      return principal.person === undefined
        ? `link ${principal.linkId} of ${principal.tenant}`
        : `${principal.person} (link ${principal.linkId} of ${principal.tenant})`
  }
}

/**
 * Who the answer was given by as its sender tells it: a key's `onBehalfOf` when it has one, else the principal.
 *
 * @since 0.1.0
 * @category Utils
 */
export const claimed = (principal: Principal): Principal =>
  principal._tag === "ApiKey" && principal.onBehalfOf !== undefined ? principal.onBehalfOf : principal

/**
 * The roles a principal holds, as far as the party that checked it vouches for them: an API key's (the server's
 * configuration), a program's own (`Client.roles`, in process); a handler, a grant or the policy hold none. What a
 * client claims over HTTP (`ApiKey.onBehalfOf`) adds none: the key is what the server checked.
 *
 * @since 0.1.0
 * @category Utils
 */
export const rolesOf = (principal: Principal | undefined): ReadonlyArray<string> =>
  principal?._tag === "ApiKey" || principal?._tag === "Client" ? principal.roles ?? [] : []

/**
 * The names a principal answers to in `approvers.principals`: an API key's id (`key_…`), a program's label, a
 * handler's name, the person an answer link was made for.
 *
 * @since 0.1.0
 * @category Utils
 */
export const namesOf = (principal: Principal | undefined): ReadonlyArray<string> => {
  switch (principal?._tag) {
    case "ApiKey":
      return [principal.keyId]
    case "Client":
      return principal.label === undefined ? [] : [principal.label]
    case "Handler":
      return [principal.name]
    case "Link":
      // The person the tenant's key made the link for: a name a trusted caller gave.
      return principal.person === undefined ? [] : [principal.person]
    default:
      return []
  }
}

/**
 * Whether `principal` may answer what `approvers` guards: it holds one of their roles or is one of their principals.
 * No approvers: anyone may.
 *
 * @since 0.1.0
 * @category Utils
 */
export const mayAnswer = (
  principal: Principal | undefined,
  approvers: { readonly roles: ReadonlyArray<string>; readonly principals: ReadonlyArray<string> } | undefined
): boolean =>
  approvers === undefined ||
  rolesOf(principal).some((role) => approvers.roles.includes(role)) ||
  namesOf(principal).some((name) => approvers.principals.includes(name))
