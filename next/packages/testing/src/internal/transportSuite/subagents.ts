/**
 * Tree scenarios (the subagent approvals guide): the root's handlers and `Blocked` cover every subagent, a child's
 * callback is answered through the root turn, a subagent left running by an earlier turn asks during a later one
 * (and `CallbackHandler.scopedToWaitingTurn` leaves it open), interrupting a child resolves its callbacks
 * `cancelled`, and a subagent starts a subagent of its own when its builtins allow it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import type { Callback } from "@parley/core/Callback"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import type { CallbackOpened, TurnEvent } from "@parley/core/TurnEvent"
import type { Completed } from "@parley/core/TurnState"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as ScriptedModel from "../../ScriptedModel.js"
import { assertOneResolution, logOf, ofTag, stateAs, turnOf } from "./assertions.js"
import { allow } from "./fixtures.js"
import type { WithModel } from "./harness.js"
import {
  agentOf,
  CI,
  delegateBrain,
  DEPLOY,
  deployer,
  deployerBrain,
  middle,
  ops,
  opsBrain,
  researcher,
  researcherBrain,
  shop,
  SHOP_ANSWER,
  SHOP_QUESTION,
  shopBrain,
  STOP,
  top,
  treeModel,
  WAIT
} from "./treeAgents.js"

const keep = new Answer.KeepCallbackOpen()

const shopModel = () => treeModel([[shop, shopBrain], [researcher, researcherBrain]])
const opsModel = () => treeModel([[ops, opsBrain], [deployer, deployerBrain]])
const depthModel = () =>
  treeModel([[top, delegateBrain("middle")], [middle, delegateBrain("researcher")], [researcher, researcherBrain]])

/** `callbacks` as `<asked by the root?> <tool id>`, the way the guide prints them. */
const describeApproval = (rootSessionId: string, callback: Callback): string =>
  callback._tag === "OpenApproval"
    ? `${callback.sessionId === rootSessionId} ${callback.request.tool.id}`
    : `${callback.sessionId === rootSessionId} ${callback._tag}`

/**
 * The first callback of the one subagent that `state`'s turn started, read from the subagent's own session: it may
 * open after the turn that started the subagent ended.
 */
const firstCallbackOfChild = (agent: Agent.Agent, state: Completed) =>
  Effect.gen(function*() {
    const started = ofTag(yield* logOf(yield* turnOf(agent, state)), "SubagentStarted")
    assert.strictEqual(started.length, 1, "the turn started one subagent")
    const child = yield* Agent.session(agent, started[0].childSessionId)
    const childTurn = yield* Session.turn(child, started[0].childTurnId)
    const opened = yield* Turn.events(childTurn).pipe(
      Stream.filter((event: TurnEvent): event is CallbackOpened => event._tag === "CallbackOpened"),
      Stream.runHead
    )
    if (Option.isNone(opened)) return assert.fail("the subagent's turn ended without opening a callback")
    const callback = opened.value.callback
    // A subagent's callback names the subagent's own session and turn.
    assert.strictEqual(callback.sessionId, started[0].childSessionId)
    assert.strictEqual(callback.turnId, started[0].childTurnId)
    return callback
  })

export const subagents = (withModel: WithModel) =>
  describe("subagents", () => {
    it.effect("one handler answers the whole tree: both spawns and each researcher's lookup_price", () =>
      withModel(shopModel(), () =>
        Effect.gen(function*() {
          const asked: Array<string> = []
          const session = yield* Agent.startSession(shop)
          const record = CallbackHandler.of({
            approval: (context) => {
              asked.push(describeApproval(session.id, context.callback))
              return keep
            }
          })
          const state = yield* Session.run(session, SHOP_QUESTION).pipe(
            Effect.provide(
              CallbackHandler.layer([record, CallbackHandler.allowTools(["agents.spawn", "client.lookup_price"])])
            )
          )
          assert.strictEqual(stateAs(state, "Completed").text, SHOP_ANSWER)
          // The researchers run concurrently: their approvals may come in any order.
          assert.deepStrictEqual([...asked].sort(), [
            "false client.lookup_price",
            "false client.lookup_price",
            "true agents.spawn",
            "true agents.spawn"
          ])
        })))

    it.effect("two children asking at once are listed in one Blocked and answered through the root turn", () =>
      withModel(shopModel(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(shop)
          let state = yield* Session.run(session, SHOP_QUESTION)
          const rootTurnId = state.turnId
          const seen: Array<string> = []
          const sizes: Array<number> = []
          const fromChildren: Array<Callback> = []
          while (state._tag === "Blocked") {
            assert.strictEqual(state.sessionId, session.id)
            assert.strictEqual(state.turnId, rootTurnId)
            const turn = yield* Session.turn(session, state.turnId)
            sizes.push(state.callbacks.length)
            for (const callback of state.callbacks) {
              seen.push(describeApproval(session.id, callback))
              if (callback.sessionId !== session.id) fromChildren.push(callback)
              // The root turn answers its own callbacks and its children's.
              yield* Turn.answer(turn, callback.id, allow)
            }
            state = yield* Turn.result(turn, { after: state })
          }
          assert.deepStrictEqual(seen, [
            "true agents.spawn",
            "true agents.spawn",
            "false client.lookup_price",
            "false client.lookup_price"
          ])
          // Both spawns, then both children's approvals, each pair in one Blocked.
          assert.deepStrictEqual(sizes, [2, 2])
          assert.strictEqual(stateAs(state, "Completed").text, SHOP_ANSWER)
          // Each child's callback names the child's own session and turn, as SubagentStarted announced them.
          const events = yield* logOf(yield* Session.turn(session, rootTurnId))
          const started = ofTag(events, "SubagentStarted")
          assert.deepStrictEqual(started.map((event) => event.agent), ["researcher", "researcher"])
          assert.deepStrictEqual(
            fromChildren.map((callback) => `${callback.sessionId} ${callback.turnId}`).sort(),
            started.map((event) => `${event.childSessionId} ${event.childTurnId}`).sort()
          )
          for (const callback of fromChildren) {
            assert.deepStrictEqual(assertOneResolution(events, callback.id, "answered").answer, allow)
          }
        })))

    it.effect("a subagent of an earlier turn asks during a later one: a scoped handler leaves it open", () =>
      withModel(opsModel(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(ops)
          const first = yield* Session.run(session, DEPLOY).pipe(
            Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
          )
          assert.strictEqual(stateAs(first, "Completed").text, "The deployer is on it.")
          const pending = yield* firstCallbackOfChild(ops, stateAs(first, "Completed"))
          assert.strictEqual(describeApproval(session.id, pending), "false client.deploy")

          // Turn 2 asks something else; an allow-all handler scoped to it must not approve the deploy.
          const scoped: Array<string> = []
          const allowAllScoped = CallbackHandler.scopedToWaitingTurn({
            approval: (_context, request) => {
              scoped.push(request.tool.id)
              return allow
            }
          })
          const second = yield* Session.run(session, CI).pipe(Effect.provide(CallbackHandler.layer(allowAllScoped)))
          assert.strictEqual(stateAs(second, "Completed").text, "CI is green.")
          assert.deepStrictEqual(scoped, [])
          const secondTurn = yield* Session.turn(session, second.turnId)
          const open = yield* Turn.openCallbacks(secondTurn)
          assert.deepStrictEqual(open.map((callback) => describeApproval(session.id, callback)), [
            "false client.deploy"
          ])
          assert.strictEqual(open[0].id, pending.id)
          // Turn 2 inherits the deploy approval (its TurnStarted names it; the log has no copy), so its handlers saw it.
          const secondLog = yield* logOf(secondTurn)
          assert.deepStrictEqual(ofTag(secondLog, "TurnStarted").map((event) => event.inherited), [[pending.id]])
          assert.isFalse(ofTag(secondLog, "CallbackResolved").some((event) => event.callbackId === pending.id))

          // Turn 3: an allow-all handler that is not scoped approves it (the guide's warning).
          const asked: Array<string> = []
          const third = yield* Session.run(session, WAIT).pipe(
            Effect.provide(CallbackHandler.layer({
              approval: (context, request) => {
                asked.push(`${context.fromWaitingTurn} ${request.tool.id}`)
                assert.strictEqual(context.session.id, pending.sessionId)
                assert.strictEqual(context.session.turnId, pending.turnId)
                assert.strictEqual(context.waiting.sessionId, session.id)
                return allow
              }
            }))
          )
          assert.deepStrictEqual(asked, ["false client.deploy"])
          assert.strictEqual(stateAs(third, "Completed").text, "The deployer says: Deployed.")
          const thirdTurn = yield* Session.turn(session, third.turnId)
          const resolved = assertOneResolution(yield* logOf(thirdTurn), pending.id, "answered")
          assert.deepStrictEqual(resolved.answer, allow)
        })))

    it.effect("interrupting a child resolves its open callbacks cancelled", () =>
      withModel(opsModel(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(ops)
          const spawnOnly = CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"]))
          const first = stateAs(yield* Session.run(session, DEPLOY).pipe(Effect.provide(spawnOnly)), "Completed")
          const pending = yield* firstCallbackOfChild(ops, first)
          const stopped = yield* Session.run(session, STOP).pipe(Effect.provide(spawnOnly))
          assert.strictEqual(stateAs(stopped, "Completed").text, "Stopped.")
          const turn = yield* Session.turn(session, stopped.turnId)
          const events = yield* logOf(turn)
          assert.deepStrictEqual(
            ofTag(events, "CallbackResolved").map((event) => [event.callbackId, event.resolution]),
            [[pending.id, "cancelled"]]
          )
          assert.deepStrictEqual(
            ofTag(events, "SubagentEnded").map((event) => [event.childSessionId, event.state._tag]),
            [[pending.sessionId, "Cancelled"]]
          )
          assert.deepStrictEqual(yield* Turn.openCallbacks(turn), [])
          const error = yield* Effect.flip(Turn.answer(turn, pending.id, allow))
          assert.strictEqual(error._tag, "CallbackNotOpen")
        })))

    it.effect("a subagent whose builtins allow it starts a subagent (depth 2); the root answers the tree", () =>
      withModel(
        depthModel(),
        (model) =>
          Effect.gen(function*() {
            const asked: Array<string> = []
            const session = yield* Agent.startSession(top)
            const state = yield* Session.run(session, "What does the Atlas cost?").pipe(
              Effect.provide(CallbackHandler.layer({
                approval: (context, request) => {
                  asked.push(`${context.fromWaitingTurn} ${request.tool.id}`)
                  assert.strictEqual(context.waiting.sessionId, session.id)
                  return allow
                }
              }))
            )
            const completed = stateAs(state, "Completed")
            assert.strictEqual(completed.text, "The Atlas costs 1,200 EUR.")
            assert.deepStrictEqual(asked, ["true agents.spawn", "true agents.spawn", "true client.lookup_price"])
            // The root's turn announces the child and the grandchild.
            const events = yield* logOf(yield* Session.turn(session, completed.turnId))
            assert.deepStrictEqual(ofTag(events, "SubagentStarted").map((event) => event.agent), [
              "middle",
              "researcher"
            ])
            // The builtins decide who may start subagents: middle is offered agents_*, the researcher its tool only.
            const calls = yield* model.calls
            const offered = (name: string) =>
              calls.filter((call) => agentOf(call, [top, middle, researcher]) === name)
                .map((call) => [...ScriptedModel.toolNames(call)].sort())[0]
            assert.deepStrictEqual(offered("middle"), [
              "agents_interrupt",
              "agents_message",
              "agents_spawn",
              "agents_wait"
            ])
            assert.deepStrictEqual(offered("researcher"), ["lookup_price"])
          })
      ))
  })
