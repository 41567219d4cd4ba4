/**
 * The approval-loop workload of the benchmarks, and the checks every turn goes through.
 *
 * - One tool, `lookup_price({ product })`, with a handler (a `Tool` from `@parley/tools`) that counts its runs.
 * - An agent whose policy asks before every tool call (`permissionMode: "ask"`, so `client.lookup_price` asks).
 * - A model that first calls `lookup_price({ product: "atlas" })` and, once the result is in its prompt, answers
 *   with text quoting the price (`decide`, shared by the `ScriptedModel` brain and the raw model double).
 * - The host approves: with a `CallbackHandler` while a run waits (`approveAll`), or by id after `Blocked`.
 *
 * Each turn runs in its own session, and the user message names the session (`… [ses_…]`), so the model, the
 * approval handler and the tool all file what they saw under the same key in the `Ledger`. A turn then passes
 * `checkBlocked` (paused on exactly one approval of `lookup_price`, one model call, the tool not run) and
 * `checkCompleted` (one approval, the tool ran once and after it, two model calls, the expected text).
 *
 * Nothing runs on import: this file only defines values.
 */
import { Agent, Answer, type Callback, CallbackHandler, type Session, type TurnState } from "@parley/core"
import { Tool } from "@parley/tools"
import { Data, Effect, Option, Schema } from "effect"
import type * as Prompt from "effect/ai/Prompt"

// ----------------------------------------------------------------------------
// The tool, the agent and the messages
// ----------------------------------------------------------------------------

export const Price = Schema.Struct({ product: Schema.String, price: Schema.Number })

export const PRODUCT = "atlas"
export const PRICE = 129

/** The text the model answers with once it has the price. */
export const answerText = (price: typeof Price.Type) => `The ${price.product} costs ${price.price} EUR.`

export const expectedText = answerText({ product: PRODUCT, price: PRICE })

/** The user message of the turn of `sessionId`: the model finds the session in it. */
export const message = (sessionId: string) => `What does the ${PRODUCT} cost? [${sessionId}]`

const sessionOfMessage = (text: string): string | undefined => /\[(ses_[^\]]+)\]$/.exec(text)?.[1]

// ----------------------------------------------------------------------------
// The ledger: what each turn's model, approval and tool did
// ----------------------------------------------------------------------------

/** What happened in one turn so far; `approvedAt` and `ranAt` are ticks of the ledger's clock (0: never). */
export interface TurnRecord {
  modelCalls: number
  approvals: number
  toolRuns: number
  approvedAt: number
  ranAt: number
}

/**
 * Counts, per session, the model calls, approvals and tool runs. A record is opened when the session starts and
 * removed when its turn is checked, so a finished phase leaves the ledger empty (and holds no memory).
 */
export class Ledger {
  private readonly turns = new Map<string, TurnRecord>()
  private clock = 0
  /** Events filed under a session with no open record. */
  strays = 0

  open(sessionId: string): void {
    this.turns.set(sessionId, { modelCalls: 0, approvals: 0, toolRuns: 0, approvedAt: 0, ranAt: 0 })
  }

  private record(sessionId: string | undefined): TurnRecord | undefined {
    const record = sessionId === undefined ? undefined : this.turns.get(sessionId)
    if (record === undefined) this.strays++
    return record
  }

  modelCall(sessionId: string | undefined): void {
    const record = this.record(sessionId)
    if (record !== undefined) record.modelCalls++
  }

  approval(sessionId: string): void {
    const record = this.record(sessionId)
    if (record === undefined) return
    record.approvals++
    record.approvedAt = ++this.clock
  }

  toolRun(sessionId: string): void {
    const record = this.record(sessionId)
    if (record === undefined) return
    record.toolRuns++
    record.ranAt = ++this.clock
  }

  peek(sessionId: string): TurnRecord | undefined {
    return this.turns.get(sessionId)
  }

  close(sessionId: string): TurnRecord | undefined {
    const record = this.turns.get(sessionId)
    this.turns.delete(sessionId)
    return record
  }

  /** Turns opened and not yet checked. */
  get size(): number {
    return this.turns.size
  }
}

// ----------------------------------------------------------------------------
// The model's decision, on a prompt
// ----------------------------------------------------------------------------

/** What the model does on a prompt: call the tool, or answer with the price it found. */
export type Decision =
  | { readonly _tag: "CallTool" }
  | { readonly _tag: "Answer"; readonly text: string }

const lastUserText = (prompt: Prompt.Prompt): string => {
  for (let i = prompt.content.length - 1; i >= 0; i--) {
    const entry = prompt.content[i]
    if (entry.role === "user") return entry.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
  }
  return ""
}

const priceResult = (prompt: Prompt.Prompt): Option.Option<unknown> => {
  for (const entry of prompt.content) {
    if (entry.role !== "tool") continue
    for (const part of entry.content) {
      if (part.type === "tool-result" && part.name === "lookup_price") return Option.some(part.result)
    }
  }
  return Option.none()
}

const decodePrice = Schema.decodeUnknownOption(Price)

/** Files the model call in the ledger and decides: no `lookup_price` result yet → call it; else quote the price. */
export const decide = (ledger: Ledger, prompt: Prompt.Prompt): Decision => {
  ledger.modelCall(sessionOfMessage(lastUserText(prompt)))
  return Option.match(priceResult(prompt), {
    onNone: () => ({ _tag: "CallTool" }),
    onSome: (result) => ({
      _tag: "Answer",
      text: Option.match(decodePrice(result), {
        onNone: () => `I could not read the price (${JSON.stringify(result)}).`,
        onSome: answerText
      })
    })
  })
}

// ----------------------------------------------------------------------------
// The agent and the host's approval handler
// ----------------------------------------------------------------------------

/** The agent of the workload: `lookup_price`, whose runs go to `ledger`, and a policy that asks for every call. */
export const makeAgent = (ledger: Ledger) => {
  const lookupPrice = Tool.make(
    "lookup_price",
    {
      description: "The price of a product, in EUR.",
      parameters: { product: Schema.String },
      success: Price
    },
    ({ product }, callback) =>
      Effect.sync(() => {
        ledger.toolRun(callback.sessionId)
        return { product, price: PRICE }
      })
  )
  return Agent.make({ name: "bench", model: "scripted", tools: [lookupPrice], permissionMode: "ask" })
}

/** The host's handler of variant A: approves every `lookup_price` call, filed in `ledger`. */
export const approveAll = (ledger: Ledger) =>
  CallbackHandler.layer({
    approval: (context, request) => {
      if (request.tool.id !== "client.lookup_price") return new Answer.KeepCallbackOpen()
      ledger.approval(context.callback.sessionId)
      return new Answer.AllowApproval()
    }
  })

// ----------------------------------------------------------------------------
// Checks
// ----------------------------------------------------------------------------

/** A turn did not do what the workload says: the bench stops. */
export class CheckFailed extends Data.TaggedError("CheckFailed")<{
  readonly phase: string
  readonly sessionId: string
  readonly detail: string
}> {
  override get message(): string {
    return `check failed in ${this.phase} (session ${this.sessionId}): ${this.detail}`
  }
}

const describe = (state: TurnState.TurnState): string => {
  switch (state._tag) {
    case "Completed":
      return `Completed ${JSON.stringify(state.text)}`
    case "Failed":
      return `Failed: ${state.error.message}`
    case "Blocked":
      return `Blocked on ${state.callbacks.map((callback) => callback._tag).join(", ") || "nothing"}`
    case "Cancelled":
      return "Cancelled"
  }
}

const countsOf = (record: TurnRecord) =>
  `model calls ${record.modelCalls}, approvals ${record.approvals}, tool runs ${record.toolRuns}`

/** A turn paused on its approval, as the host keeps it to answer by id. */
export interface Paused {
  readonly blocked: TurnState.Blocked
  readonly approval: Callback.OpenApproval
}

/**
 * How strict the model-call counts are. `stepsMayRepeat`: a model step may have run more than once (another engine
 * on the same database took the tree up and issued the step again, see `answerProcess.ts`); the counts are then
 * minimums, and everything else is checked as usual.
 */
export interface Strictness {
  readonly stepsMayRepeat: boolean
}

const strict: Strictness = { stepsMayRepeat: false }

const modelCallsOk = (calls: number, expected: number, strictness: Strictness) =>
  strictness.stepsMayRepeat ? calls >= expected : calls === expected

/** The turn of `session` is blocked on exactly one approval of `lookup_price`, after one model call. */
export const checkBlocked = (
  ledger: Ledger,
  phase: string,
  session: Session.Session,
  state: TurnState.TurnState,
  strictness: Strictness = strict
): Effect.Effect<Paused, CheckFailed> => {
  const fail = (detail: string) => Effect.fail(new CheckFailed({ phase, sessionId: session.id, detail }))
  if (state._tag !== "Blocked") return fail(`expected Blocked on one approval, got ${describe(state)}`)
  const [callback, ...more] = state.callbacks
  if (callback === undefined || more.length > 0 || callback._tag !== "OpenApproval") {
    return fail(`expected Blocked on one approval, got ${describe(state)}`)
  }
  if (callback.request.tool.id !== "client.lookup_price") {
    return fail(`the approval asks for ${callback.request.tool.id}, not client.lookup_price`)
  }
  const record = ledger.peek(session.id)
  if (record === undefined) return fail("the ledger has no record of the turn")
  if (!modelCallsOk(record.modelCalls, 1, strictness) || record.approvals !== 0 || record.toolRuns !== 0) {
    return fail(`while blocked: expected 1 model call, 0 approvals, 0 tool runs; got ${countsOf(record)}`)
  }
  return Effect.succeed({ blocked: state, approval: callback })
}

/** The turn of `session` completed with the expected text: one approval, one tool run after it, two model calls. */
export const checkCompleted = (
  ledger: Ledger,
  phase: string,
  session: Session.Session,
  state: TurnState.TurnState,
  strictness: Strictness = strict
): Effect.Effect<void, CheckFailed> => {
  const fail = (detail: string) => Effect.fail(new CheckFailed({ phase, sessionId: session.id, detail }))
  const record = ledger.close(session.id)
  if (state._tag !== "Completed") return fail(`expected Completed, got ${describe(state)}`)
  if (state.text !== expectedText) {
    return fail(`expected the text ${JSON.stringify(expectedText)}, got ${JSON.stringify(state.text)}`)
  }
  if (record === undefined) return fail("the ledger has no record of the turn")
  if (record.approvals !== 1 || record.toolRuns !== 1 || !modelCallsOk(record.modelCalls, 2, strictness)) {
    return fail(`expected 1 approval, 1 tool run, 2 model calls; got ${countsOf(record)}`)
  }
  if (record.ranAt < record.approvedAt) return fail("the tool ran before the approval")
  return Effect.void
}

/** At the end of a phase: every turn was checked and nothing was filed under an unknown session. */
export const checkLedgerEmpty = (ledger: Ledger, phase: string): Effect.Effect<void, CheckFailed> =>
  ledger.size === 0 && ledger.strays === 0
    ? Effect.void
    : Effect.fail(
      new CheckFailed({
        phase,
        sessionId: "-",
        detail: `${ledger.size} turn(s) left unchecked, ${ledger.strays} event(s) filed under no open turn`
      })
    )
