/**
 * The offline "brain" of the callbacks guide: a `ScriptedModel` function that decides from the conversation the way
 * the guide's model did, so the programs run without an API key and print the guide's output.
 *
 * - With no tool result in the prompt yet, it calls the `gmail` connector's tool (the model sees it as
 *   `gmail_latest_email`) and `get_location` (`{ precision: "city" }`) in one step.
 * - Once the results are in the prompt, it answers: where the user is (from the `get_location` result), then what
 *   became of the email: the `wording` for a denied Gmail sign-in, or a summary of the email when it could read it.
 *
 * The guide's model phrased the denied sign-in a little differently in each program; `wording` lets each program
 * print exactly its guide output.
 */
import { Connectors } from "@parley/runtime"
import { ScriptedModel } from "@parley/testing"
import { Option, Schema } from "effect"
import { Location } from "./agent.js"

export interface Wording {
  /** What the model says about the latest email when the Gmail sign-in was denied. */
  readonly signInDenied: string
}

const decodeLocation = Schema.decodeUnknownOption(Location)
const decodeEmail = Schema.decodeUnknownOption(Connectors.Email)

/** A tool error as the model quotes it (the runtime's messages end with a full stop). */
const quote = (result: ScriptedModel.ToolResult): string => String(result.result).replace(/\.$/, "")

const whereabouts = (result: ScriptedModel.ToolResult | undefined): string =>
  Option.match(result === undefined || result.isFailure ? Option.none() : decodeLocation(result.result), {
    onNone: () => `I couldn't get your location${result === undefined ? "" : `: ${quote(result)}`}.`,
    onSome: ({ city, country }) => `You're in ${city}, ${country}.`
  })

const latestEmail = (result: ScriptedModel.ToolResult | undefined, wording: Wording): string => {
  if (result === undefined) return "I didn't check your email."
  if (result.isFailure) {
    return quote(result).includes("denied the sign-in")
      ? wording.signInDenied
      : `As for your latest email: I couldn't read it (${quote(result)}).`
  }
  return Option.match(decodeEmail(result.result), {
    onNone: () => "As for your latest email: I couldn't make sense of what the mailbox returned.",
    onSome: (email) => `As for your latest email: "${email.subject}", from ${email.from}: ${email.snippet}`
  })
}

/** The brain: give it to `offlineRuntime` (see `../shared/runtime.ts`). */
export const make = (wording: Wording) => (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  if (results.length === 0) {
    return ScriptedModel.reply({
      toolCalls: [
        { name: "gmail_latest_email", params: {} },
        { name: "get_location", params: { precision: "city" } }
      ]
    })
  }
  const location = results.find((result) => result.name === "get_location")
  const email = results.find((result) => result.name === "gmail_latest_email")
  return ScriptedModel.text(`${whereabouts(location)}\n${latestEmail(email, wording)}`)
}
