/**
 * The service that answers callbacks while a run waits (`Agent.run`, `Session.run`, `Turn.result`).
 *
 * Handlers come as a record keyed by callback kind — `approval`, `clientTool`, `signIn`, each optional — turned
 * into a Layer. A handler returns an answer, or `KeepCallbackOpen` to leave the callback to a person (it then comes
 * back in `Blocked`), either as a plain value or as an `Effect`. Several handler records compose: the first that does
 * not keep the callback open answers. Each answer is recorded with the handler that gave it (`answeredBy: Handler {
 * name }` on its `CallbackResolved`): a record's `name`, a `named(...)` wrapper's, or the layer's `name` option.
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
import * as Principal from "./Principal.js"

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
  /** The name a `CallbackResolved` records for this record's answers (`answeredBy: Handler { name }`). */
  readonly name?: string | undefined
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
  /** The name its answers are recorded with, unless a member of a composed service has its own. */
  readonly name?: string | undefined
}

/**
 * A handler's answer and the handler that gave it (see `decide`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Decided {
  readonly _tag: "Decided"
  readonly answer: Answer
  readonly answeredBy: Principal.Handler
}

/** The name of an answer no handler, record or layer named. */
const defaultName = "handler"

type Decide = (callback: Callback, context: Context, fallback: string) => Effect.Effect<Decided | KeepCallbackOpen>

/** How composed and named services tell which member answered. */
const deciders = new WeakMap<Service, Decide>()

const decideWithService = (
  service: Service,
  callback: Callback,
  context: Context,
  fallback: string
): Effect.Effect<Decided | KeepCallbackOpen> => {
  const name = service.name ?? fallback
  const decide = deciders.get(service)
  if (decide !== undefined) return decide(callback, context, name)
  return Effect.map(
    service.handle(callback, context),
    (decision): Decided | KeepCallbackOpen =>
      decision._tag === "KeepCallbackOpen"
        ? decision
        : { _tag: "Decided", answer: decision, answeredBy: new Principal.Handler({ name }) }
  )
}

/**
 * Runs the handler on a callback and says which handler answered: the innermost name among the answering record (its
 * `name`), the services around it (`named`, a layer's `name`), or `"handler"`. `named` renames what it wraps.
 *
 * @since 0.1.0
 * @category Utils
 */
export const decide = (
  service: Service,
  callback: Callback,
  context: Context
): Effect.Effect<Decided | KeepCallbackOpen> => decideWithService(service, callback, context, defaultName)

/**
 * @since 0.1.0
 * @category Context
 */
export class CallbackHandler
  extends EffectContext.Service<CallbackHandler, Service>()("@parley/core/CallbackHandler")
{}

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

const toService = (handler: Handlers | Service): Service =>
  "handle" in handler ? handler : { ...fromHandlers(handler), name: handler.name }

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
  const decideAll: Decide = (callback, context, fallback) =>
    Effect.gen(function*() {
      for (const service of services) {
        const decision = yield* decideWithService(service, callback, context, fallback)
        if (decision._tag !== "KeepCallbackOpen") return decision
      }
      return keep
    })
  const service: Service = {
    handle: (callback, context) =>
      Effect.map(
        decideAll(callback, context, defaultName),
        (decision) => decision._tag === "KeepCallbackOpen" ? decision : decision.answer
      )
  }
  deciders.set(service, decideAll)
  return service
}

/**
 * Names a handler: its answers are recorded as `Handler { name }`, whatever the records inside it are called.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const named = (name: string, handler: Handlers | Service | ReadonlyArray<Handlers | Service>): Service => {
  const inner = Array.isArray(handler) ? make(...handler) : toService(handler as Handlers | Service)
  const decideNamed: Decide = (callback, context) =>
    Effect.map(
      decideWithService(inner, callback, context, name),
      (decision): Decided | KeepCallbackOpen =>
        decision._tag === "KeepCallbackOpen" ? decision : { ...decision, answeredBy: new Principal.Handler({ name }) }
    )
  const service: Service = { handle: inner.handle, name }
  deciders.set(service, decideNamed)
  return service
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface LayerOptions {
  /** The name recorded for answers of members that have none of their own (default `"handler"`). */
  readonly name?: string | undefined
}

const build = (handlers: Handlers | Service | ReadonlyArray<Handlers | Service>, options?: LayerOptions): Service => {
  const service = Array.isArray(handlers) ? make(...handlers) : make(handlers as Handlers | Service)
  if (options?.name === undefined) return service
  const named: Service = { handle: service.handle, name: options.name }
  deciders.set(named, (callback, context, fallback) => decideWithService(service, callback, context, fallback))
  return named
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
export const layer = (
  handlers: Handlers | Service | ReadonlyArray<Handlers | Service>,
  options?: LayerOptions
): Layer.Layer<CallbackHandler> => Layer.succeed(CallbackHandler, build(handlers, options))

/**
 * The handler layer, built by an Effect: for handlers that use services.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerEffect = <E, R>(
  handlers: Effect.Effect<Handlers | Service | ReadonlyArray<Handlers | Service>, E, R>,
  options?: LayerOptions
): Layer.Layer<CallbackHandler, E, R> => Layer.effect(CallbackHandler, Effect.map(handlers, (h) => build(h, options)))

/**
 * Allows tool calls whose tool declares that it only reads (`readOnlyHint`); leaves the others open.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const allowReadOnly: Handlers = {
  name: "allowReadOnly",
  approval: (_context, request) => (request.tool.annotations.readOnlyHint ? new Allow() : keep)
}

/**
 * Allows the tools with these stable ids; leaves the others open.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const allowTools = (ids: ReadonlyArray<ToolId | string>): Handlers => ({
  name: "allowTools",
  approval: (_context, request) => (ids.includes(request.tool.id) ? new Allow() : keep)
})

/**
 * Refuses every sign-in (names every request as denied).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const denyAllSignIns: Handlers = {
  name: "denyAllSignIns",
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
  const scoped: Service = {
    handle: (callback, context) => (context.fromWaitingTurn ? service.handle(callback, context) : Effect.succeed(keep)),
    name: service.name
  }
  deciders.set(
    scoped,
    (callback, context, fallback) =>
      context.fromWaitingTurn ? decideWithService(service, callback, context, fallback) : Effect.succeed(keep)
  )
  return scoped
}
