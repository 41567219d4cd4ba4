/**
 * A turn of an earlier turn cannot answer a later turn's own callback; `fromWaitingTurn` follows who started a subagent; a tree's log shows its children end before the root's turn does, and the answers given while the root is idle.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Agent from "@parley/core/Agent"
import * as Answer from "@parley/core/Answer"
import * as CallbackHandler from "@parley/core/CallbackHandler"
import * as Session from "@parley/core/Session"
import * as Turn from "@parley/core/Turn"
import type { CallbackOpened } from "@parley/core/TurnEvent"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { assertOneResolution, logOf, ofTag, stateAs, within } from "../assertions.js"
import { allow, answerFor, assistant, IN_LYON } from "../fixtures.js"
import type { WithModel } from "../harness.js"
import {
  DEPLOY,
  deployer,
  deployerBrain,
  ops,
  opsBrain,
  researcher,
  researcherBrain,
  shop,
  SHOP_QUESTION,
  shopBrain,
  treeModel
} from "../treeAgents.js"
import {
  assertFailsWith,
  coordinator,
  coordinatorBrain,
  greeterOrLocator,
  GREETING,
  HELLO,
  lab,
  labBrain,
  logUntil,
  PRICE_ATLAS,
  resolvedIn,
  START,
  WHERE
} from "./scenarios.js"

export const answerers = (withModel: WithModel) => {
  describe("who may answer, and who asked", () => {
    it.effect("a Turn of an earlier turn cannot answer a later turn's own callback", () =>
      withModel(greeterOrLocator(), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(assistant())
          const first = yield* within("turn 1", Session.run(session, HELLO))
          assert.strictEqual(stateAs(first, "Completed").text, GREETING)
          const turn1 = yield* Session.turn(session, first.turnId)
          let state = yield* within("turn 2", Session.run(session, WHERE))
          const blocked = stateAs(state, "Blocked")
          const callback = blocked.callbacks[0]
          assert.strictEqual(callback.kind, "approval")
          assert.strictEqual(callback.turnId, blocked.turnId)
          yield* assertFailsWith(
            "Turn.answer through turn 1",
            "CallbackNotOpen",
            Turn.answer(turn1, callback.id, allow)
          )
          const turn2 = yield* Session.turn(session, blocked.turnId)
          assert.deepStrictEqual((yield* Turn.openCallbacks(turn2)).map((open) => open.id), [callback.id])
          while (state._tag === "Blocked") {
            for (const open of state.callbacks) yield* Turn.answer(turn2, open.id, answerFor(open))
            state = yield* within("Turn.result", Turn.result(turn2, { after: state }))
          }
          assert.strictEqual(stateAs(state, "Completed").text, IN_LYON)
          const resolved = assertOneResolution(yield* within("turn 2's log", logOf(turn2)), callback.id, "answered")
          assert.deepStrictEqual(resolved.answer, allow)
        })))

    it.effect("fromWaitingTurn: a subagent a turn-1 subagent starts during turn 2 is not from the waiting turn", () =>
      withModel(
        treeModel([[lab, labBrain], [coordinator, coordinatorBrain], [researcher, researcherBrain]]),
        () =>
          Effect.gen(function*() {
            const session = yield* Agent.startSession(lab)
            // Turn 1 starts a coordinator and ends; the coordinator waits on its `proceed` approval.
            const first = yield* within(
              "turn 1",
              Session.run(session, START).pipe(
                Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
              )
            )
            assert.strictEqual(stateAs(first, "Completed").text, "The coordinator is on it.")
            // Turn 2: an allow-all handler that records what it is told about each approval.
            const seen: Array<string> = []
            const recordAll = CallbackHandler.layer({
              approval: (context, request) => {
                const args = request.arguments as { readonly product?: string; readonly task?: string }
                assert.strictEqual(context.waiting.sessionId, session.id)
                seen.push(`${context.fromWaitingTurn} ${request.tool.id} ${args.product ?? args.task ?? ""}`)
                return allow
              }
            })
            const second = yield* within(
              "turn 2",
              Session.run(session, PRICE_ATLAS).pipe(Effect.provide(recordAll))
            )
            const completed = stateAs(second, "Completed")
            assert.include(completed.text, "The Atlas costs 1,200 EUR.")
            assert.include(completed.text, "The Nova costs 850 EUR.")
            assert.deepStrictEqual([...seen].sort(), [
              // The coordinator (turn 1), its own spawn and the researcher it started during turn 2.
              "false agents.spawn Nova",
              "false client.lookup_price Nova",
              "false client.proceed ",
              // The root's own spawn during turn 2 and that researcher's lookup.
              "true agents.spawn Atlas",
              "true client.lookup_price Atlas"
            ])
          })
      ))
  })

  describe("the tree's log", () => {
    it.effect("a cancel files the children's SubagentEnded and TurnEnded before the root's TurnEnded", () =>
      withModel(treeModel([[shop, shopBrain], [researcher, researcherBrain]]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(shop)
          let state = yield* within("Session.run", Session.run(session, SHOP_QUESTION))
          const spawns = stateAs(state, "Blocked")
          const turn = yield* Session.turn(session, spawns.turnId)
          for (const callback of spawns.callbacks) yield* Turn.answer(turn, callback.id, allow)
          state = yield* within("Turn.result", Turn.result(turn, { after: spawns }))
          // Both researchers run, each waiting on its lookup_price approval; the root waits for them.
          const lookups = stateAs(state, "Blocked")
          assert.strictEqual(lookups.callbacks.length, 2)
          assert.isTrue(lookups.callbacks.every((callback) => callback.sessionId !== session.id))
          yield* within("Session.cancel", Session.cancel(session))
          const treeLog = yield* within(
            "the root's log up to its TurnEnded",
            logUntil(
              session.id,
              (event) => event._tag === "TurnEnded" && event.sessionId === session.id && event.turnId === turn.turnId
            )
          )
          const rootEnd = treeLog[treeLog.length - 1]
          assert.strictEqual(rootEnd._tag, "TurnEnded")
          const children = [...new Set(ofTag(treeLog, "SubagentStarted").map((event) => event.childSessionId))]
          assert.strictEqual(children.length, 2)
          for (const child of children) {
            const ended = ofTag(treeLog, "SubagentEnded").filter((event) => event.childSessionId === child)
            assert.strictEqual(ended.length, 1, `SubagentEnded of ${child} before the root's TurnEnded`)
            assert.strictEqual(ended[0].state._tag, "Cancelled")
            const childEnded = ofTag(treeLog, "TurnEnded").filter((event) => event.sessionId === child)
            assert.strictEqual(childEnded.length, 1, `the TurnEnded of ${child} before the root's TurnEnded`)
            assert.strictEqual(childEnded[0].state._tag, "Cancelled")
          }
          // `Turn.events` of the root turn shows the children end.
          const rootEvents = yield* within("Turn.events of the root turn", logOf(turn))
          assert.deepStrictEqual(
            ofTag(rootEvents, "SubagentEnded").map((event) => event.childSessionId).sort(),
            [...children].sort()
          )
          stateAs(yield* within("Turn.result", Turn.result(turn, { after: lookups })), "Cancelled")
        })))

    it.effect("a subagent's callback answered while the root is idle is resolved in the tree's log", () =>
      withModel(treeModel([[ops, opsBrain], [deployer, deployerBrain]]), () =>
        Effect.gen(function*() {
          const session = yield* Agent.startSession(ops)
          const first = yield* within(
            "turn 1",
            Session.run(session, DEPLOY).pipe(
              Effect.provide(CallbackHandler.layer(CallbackHandler.allowTools(["agents.spawn"])))
            )
          )
          const completed = stateAs(first, "Completed")
          const turn1 = yield* Session.turn(session, completed.turnId)
          const started = ofTag(yield* within("turn 1's log", logOf(turn1)), "SubagentStarted")
          assert.strictEqual(started.length, 1)
          const child = yield* Agent.session(ops, started[0].childSessionId)
          const childTurn = yield* Session.turn(child, started[0].childTurnId)
          /** The deployer's `n`th callback (1-based), read from its own turn. */
          const nthCallback = (n: number) =>
            within(
              `the deployer's callback #${n}`,
              Turn.events(childTurn).pipe(
                Stream.filter((event): event is CallbackOpened => event._tag === "CallbackOpened"),
                Stream.take(n),
                Stream.runLast,
                Effect.map(Option.map((event) => event.callback))
              )
            ).pipe(Effect.flatMap(Option.match({
              onNone: () => Effect.sync(() => assert.fail(`the deployer's turn ended before callback #${n}`)),
              onSome: Effect.succeed
            })))
          // The root is idle: its turn 1 ended. A person approves the deploy, then the deploy call answers, both
          // by id through the root's turn.
          const approval = yield* nthCallback(1)
          assert.strictEqual(approval.kind, "approval")
          yield* Turn.answer(turn1, approval.id, allow)
          const deployCall = yield* nthCallback(2)
          assert.strictEqual(deployCall.kind, "client_tool")
          const deployed = Answer.ClientToolResult.success({ deployed: true })
          yield* Turn.answer(turn1, deployCall.id, deployed)
          const treeLog = yield* within(
            "the root's log up to the deployer's end",
            logUntil(
              session.id,
              (event) => event._tag === "SubagentEnded" && event.childSessionId === started[0].childSessionId
            )
          )
          const ended = treeLog[treeLog.length - 1]
          if (ended._tag === "SubagentEnded") assert.strictEqual(stateAs(ended.state, "Completed").text, "Deployed.")
          for (const [callback, answer] of [[approval, allow], [deployCall, deployed]] as const) {
            const resolved = resolvedIn(treeLog, callback.id)
            assert.strictEqual(resolved.length, 1, `the answer to the ${callback.kind} is in the tree's log, once`)
            assert.strictEqual(resolved[0].resolution, "answered")
            assert.deepStrictEqual(resolved[0].answer, answer)
            assert.isTrue(resolved[0].seq < ended.seq)
          }
        })))
  })
}
