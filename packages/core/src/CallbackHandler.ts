/**
 * The service that answers callbacks while a run waits (`Agent.run`, `Session.run`, `Turn.result`).
 *
 * Handlers come as a record keyed by callback kind — `approval`, `clientTool`, `signIn`, each optional — turned
 * into a Layer. A handler returns an answer, or `KeepCallbackOpen` to leave the callback to a person (it then comes
 * back in `Blocked`), either as a plain value or as an `Effect`. Several handler records compose: the first that does
 * not keep the callback open answers.
 *
 * @example
 * ```ts
 * import { Answer, CallbackHandler } from "@parley/core"
 *
 * const approveReads = CallbackHandler.of({
 *   approval: (_ctx, request) =>
 *     request.tool.annotations.readOnlyHint ? new Answer.AllowApproval() : new Answer.KeepCallbackOpen()
 * })
 *
 * const Handlers = CallbackHandler.layer([approveReads, CallbackHandler.denyAllSignIns])
 * ```
 *
 * @since 0.1.0
 */
import * as EffectContext from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AllowApproval, Answer, ClientToolResult, DenyApproval } from "./Answer.js"
import { AllowApproval as Allow, KeepCallbackOpen, SignInAnswer } from "./Answer.js"

import type { ApprovalRequest, Callback, OpenApproval, OpenClientToolCall, OpenSignIn } from "./Callback.js"
import type { SessionId, ToolId, TurnId } from "./Ids.js"

/**
 * Where a callback comes from and who is waiting for it.
 *
 * - `session`: the session and turn that asked (for a subagent's callback: the subagent's own);
 * - `waiting`: the root turn whose run or `Turn.result` is waiting and answering now;
 * - `fromWaitingTurn`: whether the asking session was started by the waiting turn's tree (false for a subagent
 *   left running by an earlier turn).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Context {
  readonly session: { readonly id: SessionId; readonly turnId: TurnId }
  readonly waiting: { readonly sessionId: SessionId; readonly turnId: TurnId }
  readonly fromWaitingTurn: boolean
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface ApprovalContext extends Context {
  readonly callback: OpenApproval
}

/**
 * A handler's result: the answer, or `KeepCallbackOpen`, plain or as an Effect.
 *
 * @since 0.1.0
 * @category Models
 */
export type Result<A> = A | KeepCallbackOpen | Effect.Effect<A | KeepCallbackOpen>

/**
 * One handler per callback kind, each optional.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Handlers {
  readonly approval?: (context: ApprovalContext, request: ApprovalRequest) => Result<AllowApproval | DenyApproval>
  readonly clientTool?: (callback: OpenClientToolCall, context: Context) => Result<ClientToolResult>
  readonly signIn?: (callback: OpenSignIn, context: Context) => Result<SignInAnswer>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly handle: (callback: Callback, context: Context) => Effect.Effect<Answer | KeepCallbackOpen>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class CallbackHandler extends EffectContext.Tag("@parley/core/CallbackHandler")<CallbackHandler, Service>() {}

const keep = new KeepCallbackOpen()

const lift = <A>(result: Result<A>): Effect.Effect<A | KeepCallbackOpen> =>
  Effect.isEffect(result) ? result : Effect.succeed(result)

const fromHandlers = (handlers: Handlers): Service => ({
  handle: (callback, context) => {
    switch (callback._tag) {
      case "OpenApproval":
        return handlers.approval
          ? lift(handlers.approval({ ...context, callback }, callback.request))
          : Effect.succeed(keep)
      case "OpenClientToolCall":
        return handlers.clientTool ? lift(handlers.clientTool(callback, context)) : Effect.succeed(keep)
      case "OpenSignIn":
        return handlers.signIn ? lift(handlers.signIn(callback, context)) : Effect.succeed(keep)
    }
  }
})

const toService = (handler: Handlers | Service): Service => "handle" in handler ? handler : fromHandlers(handler)

/**
 * Helps inference when a handler record is written apart from `layer`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const of = (handlers: Handlers): Handlers => handlers

/**
 * Composes handlers: each callback goes to them in order, and the first that does not keep it open answers.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (...handlers: ReadonlyArray<Handlers | Service>): Service => {
  const services = handlers.map(toService)
  return {
    handle: (callback, context) =>
      Effect.gen(function*() {
        for (const service of services) {
          const decision = yield* service.handle(callback, context)
          if (decision._tag !== "KeepCallbackOpen") return decision
        }
        return keep
      })
  }
}

/**
 * A handler that answers nothing: every callback stays open for someone to answer by id.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const keepOpen: Service = make()

/**
 * The handler layer. A list composes in order (the first that does not keep a callback open answers).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (handlers: Handlers | Service | ReadonlyArray<Handlers | Service>): Layer.Layer<CallbackHandler> =>
  Layer.succeed(CallbackHandler, Array.isArray(handlers) ? make(...handlers) : make(handlers as Handlers | Service))

/**
 * The handler layer, built by an Effect: for handlers that use services.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerEffect = <E, R>(
  handlers: Effect.Effect<Handlers | Service | ReadonlyArray<Handlers | Service>, E, R>
): Layer.Layer<CallbackHandler, E, R> =>
  Layer.effect(
    CallbackHandler,
    Effect.map(handlers, (h) => (Array.isArray(h) ? make(...h) : make(h as Handlers | Service)))
  )

/**
 * Allows tool calls whose tool declares that it only reads (`readOnlyHint`); leaves the others open.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const allowReadOnly: Handlers = {
  approval: (_context, request) => (request.tool.annotations.readOnlyHint ? new Allow() : keep)
}

/**
 * Allows the tools with these stable ids; leaves the others open.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const allowTools = (ids: ReadonlyArray<ToolId | string>): Handlers => ({
  approval: (_context, request) => (ids.includes(request.tool.id) ? new Allow() : keep)
})

/**
 * Refuses every sign-in (names every request as denied).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const denyAllSignIns: Handlers = {
  signIn: (callback) => new SignInAnswer({ connected: [], denied: callback.requests.map((request) => request.id) })
}

/**
 * Restricts a handler to callbacks of the waiting turn's own tree: callbacks of subagents left running by an earlier
 * turn stay open for a person (see the subagent approvals guide).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const scopedToWaitingTurn = (handler: Handlers | Service): Service => {
  const service = toService(handler)
  return {
    handle: (callback, context) => (context.fromWaitingTurn ? service.handle(callback, context) : Effect.succeed(keep))
  }
}
