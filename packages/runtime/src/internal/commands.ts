/**
 * What the engine's `decide` takes and gives: the commands (from the façade, the work and recovery), the rejections
 * (typed, appending nothing) and the decision.
 */
import type { Answer } from "@parley/core/Answer"
import type { CallbackId, SessionId, TurnId } from "@parley/core/Ids"
import type {
  AnswerMismatch,
  CallbackAlreadyAnswered,
  CallbackNotOpen,
  GrantNotFound,
  NotAllowedToAnswer,
  ParleyError,
  SessionNotFound,
  TurnNotFound
} from "@parley/core/ParleyError"
import type { Principal } from "@parley/core/Principal"
import type { TurnRef } from "@parley/core/Transport"
import type { Reasoning, TraceContext, TurnEvent } from "@parley/core/TurnEvent"
import type * as TreeState from "@parley/log/TreeState"
import type * as Result from "effect/Result"
import type { Env } from "./tx.js"

export interface ModelToolCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

export type Command =
  | {
    readonly _tag: "SendMessage"
    readonly sessionId: SessionId
    readonly input: string
    /** The trace context of the turn's span, recorded on its `TurnQueued` (when the engine traces). */
    readonly trace?: TraceContext | undefined
    /** The client's id of this send (checked by the façade): a turn already queued under it is the reply. */
    readonly requestId?: string | undefined
  }
  | {
    readonly _tag: "Answer"
    readonly sessionId: SessionId
    readonly turnId: TurnId
    readonly callbackId: CallbackId
    readonly answer: Answer
    /** Who answers (the façade always says; a command without it records none). */
    readonly answeredBy?: Principal | undefined
    /** The client's id of this answer (checked by the façade): a retry of the answer that won is accepted again. */
    readonly requestId?: string | undefined
  }
  | { readonly _tag: "Cancel"; readonly sessionId: SessionId }
  /** Revokes a grant of the session (or, for a tree grant, of its tree). */
  | {
    readonly _tag: "RevokeGrant"
    readonly sessionId: SessionId
    readonly grantId: string
    readonly revokedBy: Principal
  }
  | {
    readonly _tag: "ModelStepDone"
    readonly turnId: TurnId
    readonly messageId: string
    readonly text: string
    readonly reasoning: ReadonlyArray<Reasoning>
    readonly toolCalls: ReadonlyArray<ModelToolCall>
  }
  | {
    readonly _tag: "ModelStepFailed"
    readonly turnId: TurnId
    readonly messageId: string
    readonly error: ParleyError
  }
  | {
    readonly _tag: "ToolFinished"
    readonly turnId: TurnId
    readonly toolCallId: string
    readonly isFailure: boolean
    readonly result: unknown
  }
  | {
    /** A connector's server asked for an authorization: the call waits on a sign-in that carries its URL. */
    readonly _tag: "ToolNeedsSignIn"
    readonly turnId: TurnId
    readonly toolCallId: string
    readonly source: string
    readonly authorizationUrl: string
    readonly scopes: ReadonlyArray<string>
  }
  | { readonly _tag: "WorkFailed"; readonly turnId: TurnId; readonly error: ParleyError }
  | { readonly _tag: "Expire"; readonly callbackId: CallbackId }
  /** Re-issue model steps that were in flight when the tree was loaded (recovery), then settle. */
  | { readonly _tag: "Resume" }
  /** Nothing but settling: the log moved on (events appended by another writer). */
  | { readonly _tag: "Settle" }

export type Rejection =
  | AnswerMismatch
  | CallbackNotOpen
  | CallbackAlreadyAnswered
  | NotAllowedToAnswer
  | GrantNotFound
  | SessionNotFound
  | TurnNotFound

export type Reply = TurnRef | undefined

export interface Decision {
  readonly events: ReadonlyArray<TurnEvent>
  readonly state: TreeState.TreeState
  readonly reply: Result.Result<Reply, Rejection>
}

export type { Env }
