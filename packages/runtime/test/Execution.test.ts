import { assert, describe, it } from "@effect/vitest"
import type { Ids, TurnEvent } from "@parley/core"
import { Agent, AgentSpec, Answer, ToolSpec } from "@parley/core"
import { TreeState } from "@parley/log"
import { DateTime, Option, Result } from "effect"
import { resolveTools } from "../src/internal/agentTools.js"
import type { Command } from "../src/internal/decide.js"
import { decide } from "../src/internal/decide.js"
import { mint } from "../src/internal/tx.js"

// Who records a tool's start (issue 16): an answer records the decision, never the execution. The engine that owns the
// tree (its `executor`: the owner and epoch of its lease) records `ToolExecutionStarted` itself, and runs only what it
// recorded. These are the rules as `decide` applies them: given a log, a command, the events it appends.

const treeId = "ses_exec" as Ids.SessionId
/** The secret the decisions mint ids from (the engine draws a new one for each; these rules fix it). */
const seed = new TextEncoder().encode("exec")
const at = DateTime.makeUnsafe(0)
const ownerA = { owner: "engine-a", epoch: 1 }
const ownerB = { owner: "engine-b", epoch: 2 }

const tool = (name: string, annotations: ToolSpec.ToolAnnotations) =>
  new ToolSpec.ToolSpec({
    id: `client.${name}` as ToolSpec.ToolSpec["id"],
    name,
    description: name,
    parameters: { type: "object", properties: {} },
    annotations,
    runsIn: "runtime"
  })

const charge = tool("charge", new ToolSpec.ToolAnnotations({}))
const rates = tool("fetch_rates", new ToolSpec.ToolAnnotations({ idempotentHint: true }))
const researcher = Agent.make({
  name: "researcher",
  model: "scripted",
  instructions: "Research.",
  builtins: new AgentSpec.Builtins({ subagents: false })
})
const agent = Agent.make({
  name: "cashier",
  model: "scripted",
  instructions: "Charge.",
  permissionMode: "ask",
  tools: [charge, rates],
  subagents: [researcher],
  maxSteps: 2
}).spec

const env = {
  toolsOf: (spec: AgentSpec.AgentSpec) =>
    Result.getOrElse(resolveTools(spec, { get: () => Option.none(), revision: () => 0 }), () => new Map())
}

/** Decides the commands one after another from the empty tree, each with its executor; returns the state and the events. */
const run = (
  steps: ReadonlyArray<readonly [Command, typeof ownerA | undefined]>,
  from: TreeState.TreeState = TreeState.empty({ treeId, agent, createdAt: at })
) => {
  let state = from
  const appended: Array<ReadonlyArray<TurnEvent.TurnEvent>> = []
  for (const [command, executor] of steps) {
    const decision = decide(state, command, at, seed, env, executor)
    assert.isTrue(decision.reply._tag === "Success", `${command._tag} was refused`)
    state = decision.state
    appended.push(decision.events)
  }
  return { state, appended }
}

/** The turn the first message queues (at seq 0). */
const turnId = mint(seed, "turn", 0) as Ids.TurnId
const send: Command = { _tag: "SendMessage", sessionId: treeId, input: "Charge me." }
const calls = (...toolCalls: ReadonlyArray<{ readonly name: string; readonly params?: unknown }>): Command => ({
  _tag: "ModelStepDone",
  turnId,
  messageId: "msg_2",
  text: "",
  reasoning: [],
  toolCalls: toolCalls.map((call, i) => ({ id: `call_${i}`, name: call.name, params: call.params ?? {} }))
})

/** The tree paused on the approval of one call (the owner A decided the model's step). */
const paused = (toolCall: { readonly name: string; readonly params?: unknown }) => {
  const { state } = run([[send, ownerA], [calls(toolCall), ownerA]])
  const callbackId = state.open[0]
  assert.isDefined(callbackId)
  const allow: Command = { _tag: "Answer", sessionId: treeId, turnId, callbackId, answer: new Answer.AllowApproval() }
  return { state, allow }
}

const tags = (events: ReadonlyArray<TurnEvent.TurnEvent>) => events.map((event) => event._tag)
const stageOf = (state: TreeState.TreeState) => TreeState.turn(state, turnId)?.calls[0]?.stage

describe("decide: who records a tool's start", () => {
  it("an answer decided by a process that does not own the tree records the decision alone", () => {
    const { allow, state } = paused({ name: "charge" })
    const { appended, state: answered } = run([[allow, undefined]], state)
    assert.deepStrictEqual(tags(appended[0]), ["CallbackResolved"])
    // The call is allowed and not started: it waits for the owner, and the tree is not blocked.
    assert.strictEqual(stageOf(answered)?._tag, "Callback")
    assert.isFalse(TreeState.isBlocked(answered))
    // Anyone else settling the tree records nothing either.
    assert.deepStrictEqual(tags(run([[{ _tag: "Settle" }, undefined]], answered).appended[0]), [])
    // The owner, settling the tree, records the start under its lease: it runs what it recorded.
    const owned = run([[{ _tag: "Settle" }, ownerA]], answered)
    const [started] = owned.appended[0]
    assert.deepStrictEqual(tags(owned.appended[0]), ["ToolExecutionStarted"])
    assert.deepStrictEqual(started._tag === "ToolExecutionStarted" ? started.executor : undefined, ownerA)
    assert.deepStrictEqual(stageOf(owned.state), { _tag: "Executing", executor: ownerA })
  })

  it("the owner's answer records the decision and the start in one append", () => {
    const { allow, state } = paused({ name: "charge" })
    const { appended } = run([[allow, ownerA]], state)
    assert.deepStrictEqual(tags(appended[0]), ["CallbackResolved", "ToolExecutionStarted"])
  })

  it("a spawn approved by another process is started by the owner: the subagent starts once", () => {
    const { allow, state } = paused({ name: "agents_spawn", params: { agent: "researcher", task: "Look." } })
    const answered = run([[allow, undefined]], state)
    assert.deepStrictEqual(tags(answered.appended[0]), ["CallbackResolved"])
    const owned = run([[{ _tag: "Settle" }, ownerA]], answered.state)
    assert.deepStrictEqual(tags(owned.appended[0]).slice(0, 2), ["SubagentStarted", "TurnQueued"])
  })

  it("a new owner's Resume: a start of another owner is interrupted, an idempotent one started again, its own kept", () => {
    const { state } = run([[send, ownerA], [{ ...calls({ name: "charge" }, { name: "fetch_rates" }) }, ownerA]])
    const allowAll = (from: TreeState.TreeState, executor: typeof ownerA) =>
      from.open.reduce(
        (current, callbackId) =>
          run([[
            { _tag: "Answer", sessionId: treeId, turnId, callbackId, answer: new Answer.AllowApproval() },
            executor
          ]], current)
            .state,
        from
      )
    // Owner A recorded both starts, then stopped.
    const started = allowAll(state, ownerA)
    assert.deepStrictEqual(TreeState.turn(started, turnId)?.calls.map((call) => call.stage._tag), [
      "Executing",
      "Executing"
    ])
    // B takes the tree over (a new epoch): charge may have run — the model is told; fetch_rates runs again, B's.
    const resumed = run([[{ _tag: "Resume" }, ownerB]], started)
    const events = resumed.appended[0]
    const completed = events.find((event) => event._tag === "ToolCallCompleted")
    assert.isTrue(completed?._tag === "ToolCallCompleted" && completed.toolCallId === "call_0" && completed.isFailure)
    assert.include(completed?._tag === "ToolCallCompleted" ? String(completed.result) : "", "interrupted")
    const restarted = events.find((event) => event._tag === "ToolExecutionStarted")
    assert.deepStrictEqual(
      restarted?._tag === "ToolExecutionStarted" ? [restarted.toolCallId, restarted.executor] : [],
      ["call_1", ownerB]
    )
    // A Resume under the lease that recorded the start leaves it to run: nothing to settle.
    assert.deepStrictEqual(
      tags(run([[{ _tag: "Resume" }, ownerB]], resumed.state).appended[0]).filter((tag) => tag.startsWith("Tool")),
      []
    )
  })
})

describe("decide: aborted steps are not steps", () => {
  it("a turn whose model steps are aborted by crashes more times than maxSteps completes", () => {
    /** A crash in the step in flight: the next owner's Resume aborts it and issues it again. */
    const crashes = (from: TreeState.TreeState, times: number) => {
      let state = from
      for (let crash = 0; crash < times; crash++) {
        const resumed = run([[{ _tag: "Resume" }, ownerA]], state)
        assert.deepStrictEqual(tags(resumed.appended[0]), ["MessageAborted", "ModelStepStarted"])
        state = resumed.state
      }
      return state
    }
    const stepDone = (state: TreeState.TreeState, command: Command) => {
      const messageId = TreeState.turn(state, turnId)?.step?.messageId ?? ""
      return run([[{ ...command, messageId } as Command, ownerA]], state)
    }
    // maxSteps is 2: the first step is aborted five times, then calls a tool (approved, run, finished).
    const first = stepDone(crashes(run([[send, ownerA]]).state, 5), calls({ name: "fetch_rates" }))
    assert.strictEqual(TreeState.turn(first.state, turnId)?.steps, 1)
    const callbackId = first.state.open[0]
    const ran = run([
      [{ _tag: "Answer", sessionId: treeId, turnId, callbackId, answer: new Answer.AllowApproval() }, ownerA],
      [{ _tag: "ToolFinished", turnId, toolCallId: "call_0", isFailure: false, result: { eur: 1 } }, ownerA]
    ], first.state)
    // The second step (the last allowed) is aborted three times, then answers.
    const second = crashes(ran.state, 3)
    assert.strictEqual(TreeState.turn(second, turnId)?.steps, 2)
    const done = stepDone(second, {
      _tag: "ModelStepDone",
      turnId,
      messageId: "",
      text: "1 EUR is 1 EUR.",
      reasoning: [],
      toolCalls: []
    })
    const ended = done.appended[0].find((event) => event._tag === "TurnEnded")
    assert.strictEqual(ended?._tag === "TurnEnded" ? ended.state._tag : "not ended", "Completed")
  })
})
