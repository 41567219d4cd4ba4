import { assert, describe, it } from "@effect/vitest"
import type { TurnEvent } from "@parley/core"
import { Answer } from "@parley/core"
import { TreeState } from "@parley/log"
import { decide } from "../../src/internal/decide.js"
import type { Seed } from "../../src/internal/tx.js"
import { assistant, env, header, seed, treeId } from "./fixtures.js"
import type { Step } from "./spec.js"
import { answer, calls, executorOf, send, toolFinished } from "./spec.js"

// Where the ids a decision mints come from: its seed (the engine draws a new one for every decision) and the seq of
// the event that creates them, nothing else. A decision is a function of its inputs: the same seed, the same ids;
// another seed, none of them — the tree's id and the seqs alone tell nothing.

/** A tree with one id of each kind: a turn, an approval, a grant, a subagent's session and its first turn. */
const steps: ReadonlyArray<Step> = [
  send("Charge me."),
  calls("charge"),
  answer(new Answer.AllowApproval({ remember: "session" })),
  toolFinished(0, { ok: true }),
  calls({ name: "agents_spawn", params: { agent: "researcher", task: "Look it up." } })
]

/** The log the steps append when every decision mints from the seed `from`. */
const logUnder = (from: Seed): ReadonlyArray<TurnEvent.TurnEvent> => {
  let state = TreeState.empty(header(assistant))
  const log: Array<TurnEvent.TurnEvent> = []
  for (const step of steps) {
    const decision = decide(state, step.make(state), step.time, from, env, executorOf(step.decider))
    assert.isTrue(decision.reply._tag === "Success", `${step.make(state)._tag} was refused`)
    state = decision.state
    log.push(...decision.events)
  }
  return log
}

/** The minted ids of a log, in the order they appear (the tree's own id left out: the engine gave it). */
const mintedIn = (log: ReadonlyArray<TurnEvent.TurnEvent>): ReadonlyArray<string> => {
  const ids = new Set<string>()
  for (const event of log) {
    JSON.stringify(event, (_key, value) => {
      if (typeof value === "string" && /^(ses|turn|cb|grant)_/.test(value) && value !== treeId) ids.add(value)
      return value
    })
  }
  return [...ids]
}

describe("decide: minted ids", () => {
  it("the same seed mints the same ids; another seed mints others, for every kind of id", () => {
    const once = logUnder(seed)
    const again = logUnder(seed)
    const other = logUnder(new TextEncoder().encode("another"))
    assert.deepStrictEqual(again, once, "a decision is a function of its inputs")
    const ids = mintedIn(once)
    assert.deepStrictEqual(
      [...new Set(ids.map((id) => id.slice(0, id.indexOf("_"))))].sort(),
      ["cb", "grant", "ses", "turn"],
      "the steps mint an id of each kind"
    )
    assert.deepStrictEqual(other.map((event) => event._tag), once.map((event) => event._tag), "the same events")
    const others = mintedIn(other)
    assert.strictEqual(others.length, ids.length)
    for (const id of ids) assert.notInclude(others, id, `${id} came from the seed`)
  })
})
