/**
 * The engine's work items — a model step, a tool the runtime runs (a connector's, or a program's tool whose handler
 * the runtime was given) — and their helpers: the macrotask yield before a step, a defect's message, and the tool
 * call a model invented (a call to none of the agent's tools, which `effect/ai` hands on with its validation deferred).
 */
import type { AgentSpec } from "@parley/core/AgentSpec"
import * as Answer from "@parley/core/Answer"
import { ClientToolRequest, OpenClientToolCall } from "@parley/core/Callback"
import type { CallbackId, SessionId } from "@parley/core/Ids"
import { newCallbackId } from "@parley/core/Ids"
import { ModelFailure, ToolFailure } from "@parley/core/ParleyError"
import type { AgentInvalid } from "@parley/core/ParleyError"
import { MessageDelta, Reasoning } from "@parley/core/TurnEvent"
import * as TreeState from "@parley/log/TreeState"
import type * as LanguageModel from "effect/ai/LanguageModel"
import type * as Response from "effect/ai/Response"
import * as Cause from "effect/Cause"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Connectors from "../Connectors.js"
import type * as RuntimeTools from "../RuntimeTools.js"
import type { ResolvedTool } from "./agentTools.js"
import type { Command } from "./decide.js"
import type * as Live from "./engine/live.js"
import { promptOf, toolkitOf } from "./prompt.js"
import { refOf } from "./toolCalls.js"
import { noValidation } from "./tx.js"

/** A tool call of the model: its id, the tool's name, its parameters. */
interface ModelCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

/**
 * The first tool call in `parts` whose name is none of the agent's tools: what the model invented. `effect/ai` hands
 * such a call on (`toolCallValidation: "deferred"`) instead of failing the stream.
 */
export const inventedToolCall = (
  parts: ReadonlyArray<Response.AnyPart>,
  tools: ReadonlyMap<string, unknown>
): ModelCall | undefined => {
  for (const part of parts) {
    if (part.type === "tool-call" && !tools.has(part.name)) return { id: part.id, name: part.name, params: part.params }
  }
  return undefined
}

/** Whether tool parameters are a JSON object, as every tool's parameters are (a JSON Schema of `type: "object"`). */
const isObject = (params: unknown) => typeof params === "object" && params !== null && !Array.isArray(params)

/**
 * Lets the event loop run its timers and I/O before each model step (a microtask yield does not): a model that
 * answers at once must not starve the process. Every step, not every few milliseconds, so runs stay reproducible.
 */
export const macrotask: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

export const defectMessage = (cause: Cause.Cause<unknown>) => {
  const squashed = Cause.squash(cause)
  return squashed instanceof Error ? squashed.message : String(squashed)
}

/** What a work item sees of its tree: the state it started from, and where its result goes. */
export interface Tree {
  readonly treeId: SessionId
  readonly state: TreeState.TreeState
  /** Hands the work's result to the tree's actor (keyed: reported work is not started again). */
  readonly report: (key: string, command: Command) => Effect.Effect<void>
  /**
   * Whether the work may begin its side effect now: the engine still holds the lease the work started under (it was
   * not deposed meanwhile) and, by the clock at this instant, that lease still holds (`Liveness`). A lease that may have
   * lapsed makes the engine claim the tree again, which settles the call as a new owner would.
   */
  readonly mayStart: Effect.Effect<boolean>
}

/** What a runtime tool's run reports: the result the model gets. */
interface Outcome {
  readonly isFailure: boolean
  readonly result: unknown
  /** The connector's server asked for a sign-in: the call waits on it instead of ending. */
  readonly signIn?: Connectors.SignInRequired | undefined
}

/**
 * The call as a handler of the program's tool sees it: the `OpenClientToolCall` a client would have been given, but
 * opened nowhere (its id, random like every callback's, answers nothing; it has no deadline; what stays the same when
 * the call runs again is its `request.toolCallId`).
 */
const callOf = (
  tree: Tree,
  turn: TreeState.Turn,
  call: TreeState.Call,
  tool: ResolvedTool,
  opened: { readonly id: CallbackId; readonly at: DateTime.Utc }
) => {
  const session = TreeState.session(tree.state, turn.sessionId)
  return new OpenClientToolCall({
    id: opened.id,
    sessionId: turn.sessionId,
    turnId: turn.turnId,
    rootTurnId: session?.parent === undefined ? turn.turnId : session.rootTurnId,
    openedAt: opened.at,
    expiresAt: undefined,
    request: new ClientToolRequest(
      { tool: refOf(tool), toolCallId: call.toolCallId, arguments: call.arguments },
      noValidation
    )
  }, noValidation)
}

/** The work items: a model step (streamed, deltas published live) and a runtime tool's run. */
export const make = (deps: {
  /** Where a model step's deltas go live (the engine's channel: never stored). */
  readonly live: Live.Live
  readonly runtimeTools: RuntimeTools.Service
  readonly toolsOf: (agent: AgentSpec) => ReadonlyMap<string, ResolvedTool>
  readonly modelOf: (agent: AgentSpec) => Effect.Effect<LanguageModel.LanguageModel, AgentInvalid>
}) => {
  const { live, modelOf, runtimeTools, toolsOf } = deps

  const modelStep = (
    tree: Tree,
    turn: TreeState.Turn,
    step: { readonly messageId: string; readonly seq: number }
  ): Effect.Effect<void> => {
    const session = TreeState.session(tree.state, turn.sessionId)
    if (session === undefined) return Effect.void
    const agent = session.agent
    const ids = { sessionId: turn.sessionId, turnId: turn.turnId, messageId: step.messageId }
    const key = `model:${step.messageId}`
    const modelFailure = (description: string, cause?: unknown) =>
      tree.report(key, {
        _tag: "ModelStepFailed",
        turnId: turn.turnId,
        messageId: step.messageId,
        error: new ModelFailure({
          module: "Engine",
          method: "streamText",
          model: agent.model ?? "(default)",
          description,
          cause
        })
      })
    return Effect.gen(function*() {
      // A model that answers at once must not starve the event loop: timers and I/O run between steps.
      yield* macrotask
      const model = yield* modelOf(agent)
      const prompt = promptOf(agent.instructions, session.conversation)
      let text = ""
      const toolCalls: Array<ModelCall> = []
      // Reasoning blocks by id, in the order they started, with the provider's metadata.
      const reasoning = new Map<string, { text: string; metadata: Record<string, unknown> }>()
      /** Takes a part in; a text delta is returned, to go live with the others of its chunk. */
      const onPart = (part: Response.AnyPart): string | undefined => {
        if (part.type === "text-delta") {
          text += part.delta
          return part.delta
        }
        if (part.type === "tool-call") toolCalls.push({ id: part.id, name: part.name, params: part.params })
        if (part.type === "reasoning-start") reasoning.set(part.id, { text: "", metadata: { ...part.metadata } })
        if (part.type === "reasoning-delta") {
          const block = reasoning.get(part.id) ?? { text: "", metadata: { ...part.metadata } }
          block.text += part.delta
          reasoning.set(part.id, block)
        }
        return undefined
      }
      const tools = toolsOf(agent)
      // Pulled chunk by chunk (cheaper than running the stream into a sink: ~half the work per step). The deltas of a
      // chunk go live together, one by one in order, at the time the chunk came. The tool calls are validated here,
      // not by `effect/ai` (`toolCallValidation: "deferred"`): a call to a tool the model invented ends the step at its
      // chunk, as the only call of the step, and becomes a tool error the model can recover from, not the end of the
      // turn; parameters that are not an object end the turn as a model that gives malformed output does.
      const outcome = yield* Effect.scoped(Effect.gen(function*() {
        const pull = yield* Stream.toPull(
          model.streamText({
            prompt,
            toolkit: toolkitOf(tools),
            disableToolCallResolution: true,
            toolCallValidation: "deferred"
          })
        )
        while (true) {
          const chunk = yield* Effect.catch(
            pull,
            (error) => Cause.isDone(error) ? Effect.succeed(undefined) : Effect.fail(error)
          )
          if (chunk === undefined) return undefined
          const invented = inventedToolCall(chunk, tools)
          if (invented !== undefined) return { invented }
          const malformed = chunk.find((part) => part.type === "tool-call" && !isObject(part.params))
          if (malformed !== undefined && malformed.type === "tool-call") {
            return { malformed: `the parameters of the call to ${malformed.name} are not an object` }
          }
          const deltas: Array<string> = []
          for (const part of chunk) {
            const delta = onPart(part)
            if (delta !== undefined) deltas.push(delta)
          }
          if (deltas.length > 0) {
            const at = yield* DateTime.now
            live.publish(
              tree.treeId,
              deltas.map((delta) => new MessageDelta({ ...ids, seq: step.seq, at, delta }, noValidation))
            )
          }
        }
      }))
      if (outcome !== undefined && "malformed" in outcome) {
        return yield* modelFailure(`Invalid output: ${outcome.malformed}`)
      }
      if (outcome !== undefined) {
        return yield* tree.report(key, {
          _tag: "ModelStepDone",
          turnId: turn.turnId,
          messageId: step.messageId,
          text: "",
          reasoning: [],
          toolCalls: [outcome.invented]
        })
      }
      yield* tree.report(key, {
        _tag: "ModelStepDone",
        turnId: turn.turnId,
        messageId: step.messageId,
        text,
        reasoning: [...reasoning.values()].filter((block) => block.text.length > 0).map((block) =>
          new Reasoning(block, noValidation)
        ),
        toolCalls
      })
    }).pipe(
      Effect.catch((error) => modelFailure(error.message, error)),
      Effect.catchDefect((defect) => modelFailure(defectMessage(Cause.die(defect)), defect))
    )
  }

  /** A program's tool the runtime runs: its handler, given to this process, answers the call. */
  const runHandler = (
    tree: Tree,
    turn: TreeState.Turn,
    call: TreeState.Call,
    tool: ResolvedTool
  ): Effect.Effect<Outcome> => {
    const handler = runtimeTools.get(tool.spec.id)
    if (Option.isNone(handler)) {
      return Effect.succeed({
        isFailure: true,
        result: `The tool ${tool.spec.name} could not run: it runs in the runtime, and no handler for ` +
          `${tool.spec.id} is provided to this runtime (RuntimeTools).`
      })
    }
    return Effect.all({ id: newCallbackId, at: DateTime.now }).pipe(
      Effect.flatMap((opened) => handler.value(callOf(tree, turn, call, tool, opened))),
      Effect.map((answer): Outcome =>
        Answer.isKeepCallbackOpen(answer)
          ? {
            isFailure: true,
            result: `The tool ${tool.spec.name} could not run: its handler left the call open, and no one else ` +
              `answers a tool the runtime runs.`
          }
          : { isFailure: answer.isFailure, result: answer.result }
      )
    )
  }

  /** How the runtime runs a tool of its own: a connector's `run`, or the handler of a program's tool. */
  const execution = (
    tree: Tree,
    turn: TreeState.Turn,
    call: TreeState.Call,
    tool: ResolvedTool | undefined
  ): Effect.Effect<Outcome> | undefined => {
    switch (tool?._tag) {
      case "connector":
        return Effect.suspend(() =>
          tool.run(call.arguments, { treeId: tree.treeId, sessionId: turn.sessionId, toolCallId: call.toolCallId })
        ).pipe(
          Effect.match({
            onFailure: (result): Outcome =>
              result instanceof Connectors.SignInRequired
                ? { isFailure: true, result: undefined, signIn: result }
                : { isFailure: true, result },
            onSuccess: (result): Outcome => ({ isFailure: false, result })
          })
        )
      case "runtime":
        return Effect.suspend(() => runHandler(tree, turn, call, tool))
      default:
        return undefined
    }
  }

  const runTool = (tree: Tree, turn: TreeState.Turn, call: TreeState.Call): Effect.Effect<void> => {
    const agent = TreeState.session(tree.state, turn.sessionId)?.agent
    const tool = agent === undefined ? undefined : toolsOf(agent).get(call.name)
    const key = `tool:${call.toolCallId}`
    const run = execution(tree, turn, call, tool)
    if (run === undefined) {
      return tree.report(key, {
        _tag: "ToolFinished",
        turnId: turn.turnId,
        toolCallId: call.toolCallId,
        isFailure: true,
        result: `There is no tool named ${call.name}.`
      })
    }
    // The last look before the side effect: an engine deposed since it recorded the start, or whose lease may have
    // lapsed by the clock, does not begin the call (the next owner's recovery reports it as interrupted). What this
    // cannot see — a pause from here on, within the margin — is the window durability.md describes.
    const guarded = Effect.flatMap(tree.mayStart, (may) => may ? Effect.asSome(run) : Effect.succeedNone)
    return guarded.pipe(
      Effect.flatMap((outcome) => {
        if (Option.isNone(outcome)) return Effect.void
        const { isFailure, result, signIn } = outcome.value
        return tree.report(
          key,
          signIn !== undefined && tool?._tag === "connector"
            ? {
              _tag: "ToolNeedsSignIn",
              turnId: turn.turnId,
              toolCallId: call.toolCallId,
              source: tool.source,
              authorizationUrl: signIn.authorizationUrl,
              scopes: signIn.scopes
            }
            : { _tag: "ToolFinished", turnId: turn.turnId, toolCallId: call.toolCallId, isFailure, result }
        )
      }),
      // A defect of the tool's code (a connector's, a handler's) ends the turn Failed.
      Effect.catchDefect((defect) =>
        tree.report(key, {
          _tag: "WorkFailed",
          turnId: turn.turnId,
          error: new ToolFailure({
            module: "Engine",
            method: "runTool",
            toolId: call.toolId,
            description: defectMessage(Cause.die(defect)),
            cause: defect
          })
        })
      )
    )
  }

  return { modelStep, runTool }
}

/** The engine's work items. */
export type Work = ReturnType<typeof make>
