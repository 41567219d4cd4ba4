/**
 * The snapshot codec of a tree's projection: a `TreeState` is a value of the schema `TreeState` (its `HashMap`s
 * encoded as arrays of entries), `encode` writes it as JSON text and `decode` reads it back, so a long
 * tree is loaded from a stored snapshot and the events after it (`TreeState.foldFrom`) instead of from `seq` 0.
 * `version` names the layout. This is the engine's storage format: it lives beside the store, not in the
 * client package.
 *
 * @example
 * ```ts
 * import { AgentSpec, Ids } from "@parley/core"
 * import { SnapshotCodec, TreeState } from "@parley/log"
 * import { DateTime, Result } from "effect"
 *
 * const state = TreeState.fold({
 *   treeId: Ids.SessionId.make("ses_example"),
 *   agent: AgentSpec.make({ name: "assistant" }),
 *   createdAt: DateTime.makeUnsafe(0)
 * }, [])
 * const json = Result.getOrThrow(SnapshotCodec.encode(state))
 * const restored = Result.getOrThrow(SnapshotCodec.decode(json))
 * console.log(restored.nextSeq === state.nextSeq) // true
 * ```
 *
 * @since 0.1.0
 */
import { AgentSpec as AgentSpecSchema } from "@parley/core/AgentSpec"
import { Answer as AnswerSchema } from "@parley/core/Answer"
import { Callback as CallbackSchema } from "@parley/core/Callback"
import {
  CallbackId as CallbackIdSchema,
  SessionId as SessionIdSchema,
  ToolId as ToolIdSchema,
  TurnId as TurnIdSchema
} from "@parley/core/Ids"
import { ApprovalGranted, Executor, Reasoning, Resolution, TraceContext, TurnCause } from "@parley/core/TurnEvent"
import { Final } from "@parley/core/TurnState"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import type * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type * as TreeStateModule from "./TreeState.js"

// =============================================================================
// Schemas
// =============================================================================

/**
 * A field that may be `undefined`: JSON leaves it out (`JSON.stringify` drops it), and a missing key decodes as
 * `undefined`.
 */
const undefinedOr = <S extends Schema.Top>(schema: S) =>
  Schema.UndefinedOr(schema).pipe(Schema.withDecodingDefaultKey(Effect.succeed(undefined)))

/** A `HashMap` as JSON holds it: the array of its `[key, value]` entries. */
const hashMapEntries = <K extends Schema.Top, V extends Schema.Top>(key: K, value: V) =>
  Schema.Array(Schema.Tuple([key, value])).pipe(Schema.decodeTo(
    Schema.HashMap(Schema.toType(key), Schema.toType(value)),
    SchemaTransformation.transform({
      decode: (entries) => HashMap.fromIterable(entries),
      // The entries' type is the tuple schema's, which the compiler does not unfold for generic `K` and `V`.
      encode: (map) => HashMap.toEntries(map) as never
    })
  ))

const MessageSchema = Schema.Union(
  [
    Schema.Struct({ role: Schema.Literal("user"), text: Schema.String }),
    Schema.Struct({
      role: Schema.Literal("assistant"),
      step: Schema.String,
      text: Schema.String,
      reasoning: Schema.Array(Reasoning),
      toolCalls: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, params: Schema.Unknown }))
    }),
    Schema.Struct({
      role: Schema.Literal("tool"),
      results: Schema.Array(
        Schema.Struct({ id: Schema.String, name: Schema.String, isFailure: Schema.Boolean, result: Schema.Unknown })
      )
    })
  ]
)

const CallStageSchema = Schema.Union(
  [
    Schema.TaggedStruct("Started", {}),
    Schema.TaggedStruct("Callback", { callbackId: CallbackIdSchema }),
    Schema.TaggedStruct("Executing", { executor: Schema.optional(Executor) }),
    Schema.TaggedStruct("Completed", { isFailure: Schema.Boolean, result: Schema.Unknown })
  ]
)

const CallSchema = Schema.Struct({
  toolCallId: Schema.String,
  toolId: ToolIdSchema,
  name: Schema.String,
  arguments: Schema.Unknown,
  stage: CallStageSchema
})

const TurnSchema = Schema.Struct({
  turnId: TurnIdSchema,
  sessionId: SessionIdSchema,
  input: Schema.String,
  cursor: Schema.Number,
  startedSeq: undefinedOr(Schema.Number),
  endedSeq: undefinedOr(Schema.Number),
  cause: undefinedOr(TurnCause),
  trace: undefinedOr(TraceContext),
  status: Schema.Literals(["queued", "running", "ended"]),
  final: undefinedOr(Final),
  step: undefinedOr(Schema.Struct({ messageId: Schema.String, seq: Schema.Number })),
  modelPending: Schema.Boolean,
  steps: Schema.Number,
  calls: Schema.Array(CallSchema)
})

const SessionSchema = Schema.Struct({
  sessionId: SessionIdSchema,
  agent: AgentSpecSchema,
  createdAt: Schema.DateTimeUtcFromString,
  parent: undefinedOr(
    Schema.Struct({ sessionId: SessionIdSchema, turnId: TurnIdSchema, toolCallId: Schema.String })
  ),
  rootTurnId: undefinedOr(TurnIdSchema),
  connected: Schema.Array(Schema.String),
  queue: Schema.Array(TurnIdSchema),
  running: undefinedOr(TurnIdSchema),
  last: undefinedOr(Final),
  children: Schema.Array(SessionIdSchema),
  conversation: Schema.Array(MessageSchema),
  requests: hashMapEntries(Schema.String, TurnIdSchema)
})

const CallbackRecordSchema = Schema.Struct({
  callback: CallbackSchema,
  seq: Schema.Number,
  resolution: undefinedOr(Resolution),
  answer: undefinedOr(AnswerSchema),
  requestId: Schema.optional(Schema.String)
})

const TreeStateSchema = Schema.Struct({
  treeId: SessionIdSchema,
  nextSeq: Schema.Number,
  sessions: hashMapEntries(SessionIdSchema, SessionSchema),
  turns: hashMapEntries(TurnIdSchema, TurnSchema),
  callbacks: hashMapEntries(CallbackIdSchema, CallbackRecordSchema),
  open: Schema.Array(CallbackIdSchema),
  blockedAt: undefinedOr(Schema.Number),
  grants: Schema.Array(ApprovalGranted)
}).annotate({ identifier: "TreeState" })

/**
 * The encoded form of a `TreeState`: plain JSON values, its `HashMap`s as arrays of `[key, value]` entries.
 *
 * @since 0.1.0
 * @category Models
 */
export type TreeStateEncoded = typeof TreeStateSchema.Encoded

/**
 * The schema of a whole state: every session (with its definition and conversation), turn, call and callback. Fields
 * that may be `undefined` are left out of the encoded form; decoding rebuilds the `HashMap`s.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const TreeState: Schema.Codec<TreeStateModule.TreeState, TreeStateEncoded> = TreeStateSchema

/**
 * The layout of snapshots that `encode` writes. It is raised whenever the layout of `TreeState` or the meaning
 * of `evolve` changes: a snapshot of another version is ignored and the log replayed from its start.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const version = 5

const TreeStateJson = Schema.fromJsonString(TreeStateSchema)
const encodeJson = Schema.encodeResult(TreeStateJson)
const decodeJson = Schema.decodeUnknownResult(TreeStateJson)

/**
 * A state as JSON text, to store beside its log (a snapshot of version `version`), so a tree is later loaded
 * from it and the events after `state.nextSeq` instead of from its whole log.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const encode = (state: TreeStateModule.TreeState): Result.Result<string, Schema.SchemaError> => encodeJson(state)

/**
 * A state back from the JSON text `encode` wrote (of the same `version`): `foldFrom` it with the
 * events from its `nextSeq` on.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const decode = (json: string): Result.Result<TreeStateModule.TreeState, Schema.SchemaError> => decodeJson(json)
