/**
 * The example agent of the callbacks guide, and the answers the programs share.
 *
 * An assistant with a client tool (`get_location`, answered by the program) and the `gmail` connector. Its
 * permission policy allows everything except `client.get_location`, which asks first, so that the program decides.
 * `get_location` declares that it only reads.
 *
 * Nothing runs on import: this file only defines values.
 */
import { Agent, Answer, type Callback, CallbackHandler, Turn } from "@parley/core"
import { PermissionPolicy } from "@parley/policy"
import { ClientTool, ToolAnnotations } from "@parley/tools"
import { Effect, Schema } from "effect"
import * as Narrate from "../shared/narrate.js"

// ----------------------------------------------------------------------------
// The example agent
// ----------------------------------------------------------------------------

export const Location = Schema.Struct({ city: Schema.String, country: Schema.String })

/** A client tool: answered through a callback, not within the session. */
export const getLocation = ClientTool.make("get_location", {
  description: "The user's current location.",
  parameters: {
    precision: Schema.Literals(["city", "street"]).pipe(Schema.withDecodingDefault(Effect.succeed("city" as const)))
  },
  success: Location,
  annotations: ToolAnnotations.readOnly
})

/** Reads the location from the device. The parameters arrive decoded, with the default applied. */
export const readLocation = (_: ClientTool.Parameters<typeof getLocation>): typeof Location.Type => ({
  city: "Lyon",
  country: "France"
})

/** Allow every tool call, but ask before each `get_location` call. */
export const permissions = new PermissionPolicy.PermissionPolicy({
  default: "allow",
  rules: [PermissionPolicy.rule("client.get_location", "ask")]
})

export const assistant = Agent.make({
  name: "assistant",
  description: "Tells you where you are (it asks before reading your location) and what your latest email is about " +
    "(it asks you to sign in to Gmail). Try: \"Where am I, and what is my latest email about?\"",
  model: "mistral-large-latest",
  instructions: "Use your tools. Answer in one short sentence.",
  tools: [getLocation],
  connectors: ["gmail"],
  permissions
})

export const question = "Where am I, and what is my latest email about?"

// ----------------------------------------------------------------------------
// Answer while a run waits: one handler per kind
// ----------------------------------------------------------------------------

/** Allows the tool calls whose tool declares that it only reads; a person decides the others. */
export const approveReads = CallbackHandler.of({
  approval: (_context, request) =>
    request.tool.annotations.readOnlyHint
      ? new Answer.AllowApproval()
      : new Answer.KeepCallbackOpen() // not mine: a person decides
})

/** The answer that refuses a sign-in: names each requested source as denied. */
export const refusal = (signIn: Callback.OpenSignIn) =>
  new Answer.SignInAnswer({ denied: signIn.requests.map((request) => request.id) })

/** Refuses every sign-in. */
export const refuseSignIns = CallbackHandler.of({ signIn: refusal })

/** Answers the calls of `get_location` with `readLocation`; calls of other client tools stay open. */
export const answerLocation = CallbackHandler.of({
  clientTool: ClientTool.answers(getLocation.answer(readLocation))
})

/**
 * The three handlers as one layer: provide it around `Agent.run`, `Session.run` or `Turn.result`. (`Narrate.handlers`
 * only names them, for the lines `npm run demo` prints; `CallbackHandler.layer([approveReads, ...])` is the same layer.)
 */
export const Handlers = CallbackHandler.layer(Narrate.handlers({ approveReads, answerLocation, refuseSignIns }))

// ----------------------------------------------------------------------------
// Answer by id
// ----------------------------------------------------------------------------

/**
 * Answers one open callback of `turn` by id, whatever its kind. `getLocation.run` takes any callback: it answers a
 * `get_location` call, and fails with `NotThisTool` for a call of another client tool, which stays open.
 */
export const answerCallback = (turn: Turn.Turn, callback: Callback.Callback) =>
  Effect.gen(function*() {
    switch (callback._tag) {
      case "OpenApproval":
        return yield* Turn.answer(turn, callback.id, new Answer.AllowApproval()) // a person said yes
      case "OpenClientToolCall":
        return yield* Turn.answer(turn, callback.id, yield* getLocation.run(callback, readLocation))
      case "OpenSignIn":
        return yield* Turn.answer(turn, callback.id, refusal(callback))
    }
  }).pipe(Effect.catchTag("NotThisTool", () => Effect.void)) // not ours: leave it open for another client
