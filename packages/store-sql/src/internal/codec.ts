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
import * as Schema from "effect/Schema"

const EventJson = Schema.fromJsonString(TurnEvent.TurnEvent)
const decodeEventEncoded = Schema.decodeUnknownResult(TurnEvent.TurnEvent)
const parseJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))
const AgentJson = Schema.fromJsonString(AgentSpec.AgentSpec)
const encodeEventJson = Schema.encodeResult(EventJson)
const decodeEventJson = Schema.decodeUnknownResult(EventJson)
const encodeAgentJson = Schema.encodeResult(AgentJson)
const decodeAgentJson = Schema.decodeUnknownResult(AgentJson)
const decodeUtc = Schema.decodeUnknownResult(Schema.DateTimeUtcFromString)

const formatError = (error: Schema.SchemaError) => error.message

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
): Result.Result<EventRow, StoreError> =>
  Result.match(encodeEventJson(event), {
    onFailure: (error) =>
      Result.fail(
        new StoreError({
          method,
          description: `event ${event.seq} of tree ${treeId} does not encode: ${formatError(error)}`,
          cause: error
        })
      ),
    onSuccess: (json) =>
      Result.succeed({
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
): Result.Result<TurnEvent.TurnEvent, StoreError> => {
  const seq = Number(row.seq)
  const where = `event ${seq} of tree ${treeId}`
  const version = Number(row.version)
  // The current version decodes straight from the text; an older one is parsed, upcast, then decoded.
  const decoded = version === TurnEvent.schemaVersion
    ? Result.mapError(decodeEventJson(row.event), (error) => `does not decode: ${formatError(error)}`)
    : Result.flatMap(
      Result.mapError(parseJson(row.event), (error) => `is not JSON: ${formatError(error)}`),
      (json) =>
        Result.flatMap(
          TurnEvent.upcast(version, json),
          (upcast) =>
            Result.mapError(
              decodeEventEncoded(upcast),
              (error) => `(schema version ${version}) does not decode: ${formatError(error)}`
            )
        )
    )
  return Result.match(decoded, {
    onFailure: (reason) => Result.fail(new StoreError({ method, description: `${where} ${reason}` })),
    onSuccess: (event) =>
      event.seq === seq
        ? Result.succeed(event)
        : Result.fail(new StoreError({ method, description: `${where} carries seq ${event.seq}` }))
  })
}

/** A tree row's columns, as written by `createTree`. */
export const encodeTree = (tree: StoredTree): Result.Result<TreeRow, StoreError> =>
  Result.match(encodeAgentJson(tree.agent), {
    onFailure: (error) =>
      Result.fail(
        new StoreError({
          method: "createTree",
          description: `the agent of tree ${tree.treeId} does not encode: ${formatError(error)}`,
          cause: error
        })
      ),
    onSuccess: (agent) =>
      Result.succeed({
        tree_id: tree.treeId,
        version: TurnEvent.schemaVersion,
        agent,
        created_at: DateTime.formatIso(tree.createdAt)
      })
  })

export const decodeTree = (treeId: SessionId, row: TreeRow): Result.Result<StoredTree, StoreError> => {
  const fail = (description: string, cause?: unknown) =>
    Result.fail(new StoreError({ method: "getTree", description: `tree ${treeId}: ${description}`, cause }))
  // A header holds the agent definition, whose schema has not changed since version 1: any known version reads.
  const version = Number(row.version)
  if (!Number.isSafeInteger(version) || version < 1 || version > TurnEvent.schemaVersion) {
    return fail(
      `its header has schema version ${row.version}; this store reads versions 1 to ${TurnEvent.schemaVersion}`
    )
  }
  const agent = decodeAgentJson(row.agent)
  if (Result.isFailure(agent)) return fail(`its agent does not decode: ${formatError(agent.failure)}`, agent.failure)
  const createdAt = decodeUtc(row.created_at)
  if (Result.isFailure(createdAt)) {
    return fail(`created_at does not decode: ${formatError(createdAt.failure)}`, createdAt.failure)
  }
  return Result.succeed({ treeId, agent: agent.success, createdAt: createdAt.success })
}
