/**
 * `parley grants list [--session <id>]` and `parley grants revoke <grant-id> [--session <id>] [--label <who>]`: the
 * grants in force (approvals answered with `remember`), of one session tree or of every session of the key, and
 * their revocation (later calls of the tool ask again).
 */
import type { SessionId } from "@parley/core/Ids"
import * as Ids from "@parley/core/Ids"
import * as Principal from "@parley/core/Principal"
import { ApprovalGranted } from "@parley/core/TurnEvent"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Connection from "./connection.js"
import { CliError } from "./errors.js"
import * as Format from "./format.js"

const sessionFlag = (description: string) =>
  Flag.String("session").pipe(
    Flag.withSchema(Ids.SessionId),
    Flag.withMetavar("SESSION-ID"),
    Flag.withDescription(description),
    Flag.optional
  )

/** The grants in force of one session's tree, or of every root session of the key (each tree once). */
const grantsOf = (connection: Connection.Connection, session: Option.Option<SessionId>) =>
  Effect.gen(function*() {
    const roots = Option.isSome(session)
      ? [session.value]
      : (yield* Connection.withApi(connection, (client) => client.sessions.list({ query: { limit: 100 } })))
        .sessions.filter((info) => info.parentSessionId === undefined).map((info) => info.sessionId)
    const found = yield* Connection.withTransport(connection, (transport) =>
      Effect.forEach(roots, (sessionId) => transport.grants(sessionId), { concurrency: 4 }))
    return found.flat()
  })

const encodeGrants = Schema.encodeSync(Schema.Array(ApprovalGranted))

const list = Command.make("list", {
  ...Connection.options,
  session: sessionFlag("Only the grants of this session's tree (default: of every session of this key)."),
  json: Flag.Boolean("json").pipe(
    Flag.withDescription("Print the grants as JSON (their ApprovalGranted events)."),
    Flag.withDefault(false)
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const grants = yield* grantsOf(connection, given.session)
    if (given.json) return yield* Console.log(JSON.stringify(encodeGrants(grants), null, 2))
    if (grants.length === 0) return yield* Console.log("no grants in force")
    yield* Console.log(table(grants))
    yield* Console.log(Format.dim("revoke one: parley grants revoke <GRANT>"))
  })).pipe(
    Command.withDescription(
      "The grants in force: approvals answered with --remember, which allow or deny later calls of the same tool " +
        "without asking."
    ),
    Command.withShortDescription("The grants in force."),
    Command.withExamples([
      { command: "parley grants list" },
      { command: "parley grants list --session ses_9f8e", description: "one session's tree" }
    ])
  )

const table = (grants: ReadonlyArray<ApprovalGranted>) =>
  Format.table(
    ["GRANT", "TOOL", "DECISION", "SCOPE", "SESSION", "GRANTED"],
    grants.map((grant) => [
      grant.grantId,
      grant.toolPattern,
      grant.decision,
      grant.scope,
      grant.sessionId,
      Principal.describe(Principal.claimed(grant.grantedBy))
    ])
  )

const revoke = Command.make("revoke", {
  ...Connection.options,
  grantId: Argument.String("grant-id").pipe(
    Argument.withDescription("The grant's id (grant_…, as grants list shows).")
  ),
  session: sessionFlag("The grant's session (default: found among the grants of every session of this key)."),
  label: Flag.String("label").pipe(
    Flag.withMetavar("WHO"),
    Flag.withDescription("Who revokes, recorded on the GrantRevoked event (a name, an e-mail address)."),
    Flag.optional
  )
}, (given) =>
  Effect.gen(function*() {
    const connection = yield* Connection.resolve(given)
    const sessionId = Option.isSome(given.session)
      ? given.session.value
      : (yield* grantsOf(connection, Option.none())).find((grant) => grant.grantId === given.grantId)?.sessionId
    if (sessionId === undefined) {
      return yield* new CliError({
        message: `no grant ${given.grantId} is in force for this key: revoked already, or never made`,
        hint: "`parley grants list` shows the grants in force",
        exitCode: 1
      })
    }
    yield* Connection.withTransport(connection, (transport) =>
      transport.revokeGrant({
        sessionId,
        grantId: given.grantId,
        revokedBy: new Principal.Client({ label: Option.getOrUndefined(given.label) })
      }))
    yield* Console.log(`revoked ${given.grantId}: later calls of its tool ask again`)
  })).pipe(
    Command.withDescription("Revoke a grant: later calls of its tool ask again."),
    Command.withExamples([
      { command: "parley grants revoke grant_5c4d" },
      { command: "parley grants revoke grant_5c4d --label alice@example.com", description: "say who revoked it" }
    ])
  )

/**
 * `parley grants list | revoke`.
 */
export const command = Command.make("grants").pipe(
  Command.withDescription("The grants in force (approvals remembered for later calls), and their revocation."),
  Command.withExamples([{ command: "parley grants list" }, { command: "parley grants revoke grant_5c4d" }]),
  Command.withSubcommands([list, revoke])
)
