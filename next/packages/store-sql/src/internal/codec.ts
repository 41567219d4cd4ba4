/**
 * Rows to and from the domain: events and tree headers are stored as JSON of their schemas' encoded form, with the
 * schema version they were written with. A row of an older version is upcast to the current one as it is read
 * (`TurnEvent.upcast`; the row itself is never rewritten); a row that does not decode, or of a version newer than this
 * code, is a `StoreError`, never a defect.
 */
import * as AgentSpec from "@parley/core/AgentSpec"
import type { SessionId } from "@parley/core/Ids"
import * as TurnEvent from "@parley/core/TurnEvent"
import type { StoredTree } from "@parley/log/EventLog"
import { StoreError } from "@parley/log/StoreError"
import * as DateTime from "effect/DateTime"
import * as Result from "effect/Result"
import * as ParseResult from "effect/SchemaIssue"
import * as Schema from "effect/Schema"

const EventJson = Schema.parseJson(TurnEvent.TurnEvent)
const decodeEventEncoded = Schema.decodeUnknownEither(TurnEvent.TurnEvent)
const parseJson = Schema.decodeUnknownEither(Schema.parseJson())
const AgentJson = Schema.parseJson(AgentSpec.AgentSpec)
const encodeEventJson = Schema.encodeEither(EventJson)
const decodeEventJson = Schema.decodeUnknownEither(EventJson)
const encodeAgentJson = Schema.encodeEither(AgentJson)
const decodeAgentJson = Schema.decodeUnknownEither(AgentJson)
const decodeUtc = Schema.decodeUnknownEither(Schema.DateTimeUtc)

const formatError = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error)

/** An event as it is written: its row in `parley_events`. */
export type EventRow = {
  readonly tree_id: string
  readonly seq: number
  readonly session_id: string
  readonly turn_id: string
  readonly tag: string
  readonly version: number
  readonly event: string
}

/** What a read selects of an event row. */
export interface StoredEventRow {
  readonly seq: number | string
  readonly version: number | string
  readonly event: string
}

/** What a read selects of a tree row. */
export interface TreeRow {
  readonly tree_id: string
  readonly version: number | string
  readonly agent: string
  readonly created_at: string
}

export const encodeEvent = (
  method: string,
  treeId: SessionId,
  event: TurnEvent.TurnEvent
): Either.Either<EventRow, StoreError> =>
  Either.match(encodeEventJson(event), {
    onLeft: (error) =>
      Either.left(
        new StoreError({
          method,
          description: `event ${event.seq} of tree ${treeId} does not encode: ${formatError(error)}`,
          cause: error
        })
      ),
    onRight: (json) =>
      Either.right({
        tree_id: treeId,
        seq: event.seq,
        session_id: event.sessionId,
        turn_id: event.turnId,
        tag: event._tag,
        version: TurnEvent.schemaVersion,
        event: json
      })
  })

export const decodeEvent = (
  method: string,
  treeId: SessionId,
  row: StoredEventRow
): Either.Either<TurnEvent.TurnEvent, StoreError> => {
  const seq = Number(row.seq)
  const where = `event ${seq} of tree ${treeId}`
  const version = Number(row.version)
  // The current version decodes straight from the text; an older one is parsed, upcast, then decoded.
  const decoded = version === TurnEvent.schemaVersion
    ? Either.mapLeft(decodeEventJson(row.event), (error) => `does not decode: ${formatError(error)}`)
    : Either.flatMap(
      Either.mapLeft(parseJson(row.event), (error) => `is not JSON: ${formatError(error)}`),
      (json) =>
        Either.flatMap(
          TurnEvent.upcast(version, json),
          (upcast) =>
            Either.mapLeft(
              decodeEventEncoded(upcast),
              (error) => `(schema version ${version}) does not decode: ${formatError(error)}`
            )
        )
    )
  return Either.match(decoded, {
    onLeft: (reason) => Either.left(new StoreError({ method, description: `${where} ${reason}` })),
    onRight: (event) =>
      event.seq === seq
        ? Either.right(event)
        : Either.left(new StoreError({ method, description: `${where} carries seq ${event.seq}` }))
  })
}

/** A tree row's columns, as written by `createTree`. */
export const encodeTree = (tree: StoredTree): Either.Either<TreeRow, StoreError> =>
  Either.match(encodeAgentJson(tree.agent), {
    onLeft: (error) =>
      Either.left(
        new StoreError({
          method: "createTree",
          description: `the agent of tree ${tree.treeId} does not encode: ${formatError(error)}`,
          cause: error
        })
      ),
    onRight: (agent) =>
      Either.right({
        tree_id: tree.treeId,
        version: TurnEvent.schemaVersion,
        agent,
        created_at: DateTime.formatIso(tree.createdAt)
      })
  })

export const decodeTree = (treeId: SessionId, row: TreeRow): Either.Either<StoredTree, StoreError> => {
  const fail = (description: string, cause?: unknown) =>
    Either.left(new StoreError({ method: "getTree", description: `tree ${treeId}: ${description}`, cause }))
  // A header holds the agent definition, whose schema has not changed since version 1: any known version reads.
  const version = Number(row.version)
  if (!Number.isSafeInteger(version) || version < 1 || version > TurnEvent.schemaVersion) {
    return fail(
      `its header has schema version ${row.version}; this store reads versions 1 to ${TurnEvent.schemaVersion}`
    )
  }
  const agent = decodeAgentJson(row.agent)
  if (Either.isLeft(agent)) return fail(`its agent does not decode: ${formatError(agent.left)}`, agent.left)
  const createdAt = decodeUtc(row.created_at)
  if (Either.isLeft(createdAt)) {
    return fail(`created_at does not decode: ${formatError(createdAt.left)}`, createdAt.left)
  }
  return Either.right({ treeId, agent: agent.right, createdAt: createdAt.right })
}
