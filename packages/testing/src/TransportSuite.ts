/**
 * The transport contract suite: the behaviour of the client API (`Agent`, `Session`, `Turn`) that every `Transport`
 * implementation must show, so the in-process transport and the HTTP transport are held to the same assertions.
 *
 * Import it as `@parley/testing/TransportSuite`: it registers `@effect/vitest` tests, so it loads vitest, and the
 * `@parley/testing` index (which programs import for `ScriptedModel`) leaves it out.
 *
 * `suite(name, makeTransport)` registers one `describe` block. `makeTransport(model, { runtimeTools })` must return a
 * fresh runtime behind the `Transport` Tag (no sessions shared between tests) in which:
 *
 * - every agent runs on `model`, whatever model name it gives (subagents included);
 * - the runtime itself runs `runtimeTools` (`RuntimeTools.layer(...runtimeTools)` of `@parley/runtime`; none in most
 *   scenarios), so sessions started there have those tools answered by the engine;
 * - an agent's instructions reach the model as the system message (the tree scenarios run several agents on the one
 *   `model`, whose brain tells them apart by their instructions);
 * - a `gmail` connector is available whose read-only `latest_email` tool returns the latest email of the demo
 *   mailbox (`Connectors.demoMailbox()` of `@parley/runtime`: subject "Dinner on Friday?");
 * - callback deadlines follow the `Clock` of the test (`TestClock.adjust` moves them; nothing waits in real time);
 * - it runs the definitions its callers give, policies included: the scenarios start sessions of their own agents.
 *   `LocalTransport` always does (a program's agents are its own). A server does only with `acceptDefinitions`: by
 *   default it runs only the agents it serves, by name, a caller's `permissions` narrowing their policies and never
 *   widening them (`@parley/server`'s `AgentOwnership` tests), so an HTTP registration starts its server with it.
 *
 * The agents are built with `Agent.make`. The single-agent scenarios use raw `ToolSpec`s: a read-only
 * `get_location` client tool whose `success` schema is `{ city, country }`, the `gmail` connector, and a policy that
 * asks before each `get_location` call (the callbacks guide's example agent). The tree scenarios follow the
 * subagent approvals guide: `Tool.make` tools (`lookup_price`, `deploy`) whose handlers come with the agents, and
 * `permissionMode: "ask"`. Every model is a deterministic `ScriptedModel` brain that decides from the tool results
 * in the prompt.
 *
 * Covered: every way of driving a session (`Agent.run` with handlers, `Blocked` answered by id and
 * `Turn.result({ after })`, `Turn.result({ onEvent })`, `Turn.events` by hand), what `Blocked` lists and where
 * `after` continues, answer validation (typed errors, nothing stored), expiry (default and per-agent timeouts),
 * cancellation, several readers of one turn, model failures, the permission policy and sign-ins, and subagent
 * trees: children asking at once in one `Blocked`, a child answered through the root turn, a subagent of an earlier
 * turn asking during a later one (left open by `CallbackHandler.scopedToWaitingTurn`), interrupting a child, and
 * depth 2. The hardening scenarios (issue 8) add: defects in models end turns `Failed`, a turn is found as soon as
 * `sendMessage` returns, `Turn.result` runs handlers once, concurrently and only for open callbacks, malformed answers
 * sent through the `Transport` are typed errors that change nothing, `fromWaitingTurn` follows who started a
 * subagent, and a tree's log files children's ends and idle-time answers where readers see them. The runtime tools
 * scenarios (issue 9) check that a tool the runtime runs is answered with no client waiting (`ToolExecutionStarted`,
 * then `ToolCallCompleted`, no callback), after the approval an `ask` policy opens, with its typed failures as results
 * and its defects as `Failed` turns, never by a client's own handler, with a failure result when the runtime lacks the
 * handler of a tool marked to run there, and in subagents too. Requests with several things wrong (issue 35, point 7)
 * fail as in-process: a malformed request id first, then an unknown session, then malformed turn and callback ids,
 * then the answer and who answers. Where the transport has a server (`Behaviour.outage`), `Turn.result` and
 * `Turn.events` started while it is down wait for it.
 *
 * @example
 * ```ts
 * import { Connectors, LocalTransport, Models, RuntimeTools, SessionStore } from "@parley/runtime"
 * import * as TransportSuite from "@parley/testing/TransportSuite"
 * import { Layer } from "effect"
 *
 * TransportSuite.suite("LocalTransport", (model, { runtimeTools }) =>
 *   LocalTransport.layer.pipe(
 *     Layer.provide([
 *       SessionStore.layerMemory,
 *       Connectors.layer([Connectors.demoMailbox()]),
 *       RuntimeTools.layer(...runtimeTools),
 *       Models.layer(Models.single(model))
 *     ])
 *   ))
 * ```
 *
 * @since 0.1.0
 */
import { describe } from "@effect/vitest"
import type * as Transport from "@parley/core/Transport"
import type * as Tool from "@parley/tools/Tool"
import type * as LanguageModel from "effect/ai/LanguageModel"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { answerValidation } from "./internal/transportSuite/answerValidation.js"
import { approvers } from "./internal/transportSuite/approvers.js"
import { blocked } from "./internal/transportSuite/blocked.js"
import { cancel } from "./internal/transportSuite/cancel.js"
import { driving } from "./internal/transportSuite/driving.js"
import { expiry } from "./internal/transportSuite/expiry.js"
import { grants } from "./internal/transportSuite/grants.js"
import { hardening } from "./internal/transportSuite/hardening.js"
import * as Harness from "./internal/transportSuite/harness.js"
import { modelFailures } from "./internal/transportSuite/modelFailures.js"
import { outage } from "./internal/transportSuite/outage.js"
import { policyAndSignIn } from "./internal/transportSuite/policyAndSignIn.js"
import { precedence } from "./internal/transportSuite/precedence.js"
import { requestIds } from "./internal/transportSuite/requestIds.js"
import { runtimeTools } from "./internal/transportSuite/runtimeTools.js"
import { subagents } from "./internal/transportSuite/subagents.js"

/**
 * What a scenario asks of the runtime `makeTransport` builds, beyond its model.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RuntimeOptions {
  /** The tools the runtime runs itself: give them to `RuntimeTools.layer(...runtimeTools)` (often none). */
  readonly runtimeTools: ReadonlyArray<Tool.Any>
}

/**
 * Where implementations may differ, what this one does.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Behaviour {
  /**
   * A definition that marks a tool `runsIn: "runtime"` whose handler the runtime lacks: the engine accepts it and
   * answers each call with a failure result (`"failure result"`, the default: `LocalTransport`, where another process
   * of the same store may have the handler), or the session is refused with `AgentInvalid` naming the tool
   * (`"refused"`: a server checks a client's definition against the tools it provides).
   */
  readonly unprovidedRuntimeTool?: "failure result" | "refused" | undefined
  /**
   * Who gets a turn's live `MessageDelta`s (never stored): every reader (`"every reader"`, the default: one process
   * runs the tree and serves its readers), or only the readers in the process that runs the tree (`"the tree's
   * process"`: a cluster's runners, where a reader on another runner has the stored `MessageCompleted`).
   */
  readonly liveDeltas?: "every reader" | "the tree's process" | undefined
  /**
   * For a transport with a server between the program and its runtime (`HttpTransport`): how to make a runtime whose
   * server can be stopped and started again (`Outage`), as `makeTransport` makes one. Given, the scenario "a server
   * that is down" runs: `Turn.result` and `Turn.events` started while it is down (connection refused) wait for it, and
   * the turn completes once it is back. Not given (`LocalTransport`, a cluster's runners: nothing can be down between
   * the program and the runtime it runs in), that scenario is not registered.
   */
  readonly outage?:
    | ((model: LanguageModel.LanguageModel, options: RuntimeOptions) => Effect.Effect<Outage, never, Scope.Scope>)
    | undefined
}

/**
 * A runtime whose server can be down (see `Behaviour.outage`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Outage {
  /** The program's transport to it (what `makeTransport` would give). */
  readonly transport: Layer.Layer<Transport.Transport>
  /** Stops the server: connections to it are refused until `up`. Its store stays. */
  readonly down: Effect.Effect<void>
  /** Starts the server again at the same address, on the same store. */
  readonly up: Effect.Effect<void>
}

/**
 * Registers the transport contract suite for one `Transport` implementation. `makeTransport(model, options)` returns
 * a fresh runtime whose agents all run on `model`, which runs `options.runtimeTools` itself and offers the `gmail`
 * demo mailbox connector (see the module docs).
 *
 * @since 0.1.0
 * @category Utils
 */
export const suite = (
  name: string,
  makeTransport: (model: LanguageModel.LanguageModel, options: RuntimeOptions) => Layer.Layer<Transport.Transport>,
  behaviour: Behaviour = {}
) =>
  describe(`${name} (Transport contract)`, () => {
    const withModel = Harness.withModel(makeTransport)
    driving(withModel, behaviour.liveDeltas ?? "every reader")
    blocked(withModel)
    answerValidation(withModel)
    precedence(withModel)
    expiry(withModel)
    cancel(withModel)
    grants(withModel)
    approvers(withModel)
    requestIds(withModel)
    modelFailures(withModel)
    policyAndSignIn(withModel)
    subagents(withModel)
    hardening(withModel)
    runtimeTools(withModel, behaviour.unprovidedRuntimeTool ?? "failure result")
    if (behaviour.outage !== undefined) outage(behaviour.outage)
  })
