/**
 * The front-end guides' agent (use-chat, ag-ui): `get_location`, a client tool behind an approval, on a scripted
 * brain (offline): it asks for the tool, then answers with the city it was given.
 */
import { Agent } from "@parley/core"
import { ScriptedModel } from "@parley/testing"
import { ClientTool } from "@parley/tools"
import { Schema } from "effect"

export const getLocation = ClientTool.make("get_location", {
  description: "Where the user is.",
  success: Schema.Struct({ city: Schema.String })
})

export const locator = Agent.make({
  name: "locator",
  model: "scripted",
  instructions: "Say where the user is.",
  tools: [getLocation],
  permissionMode: "ask"
})

export const brain = (call: ScriptedModel.Call): ScriptedModel.Reply => {
  const results = ScriptedModel.toolResults(call)
  if (results.length === 0) return ScriptedModel.toolCall("get_location", {})
  const result = results[0]
  return ScriptedModel.text(
    result.isFailure ? "I could not tell where you are." : `You are in ${(result.result as { city: string }).city}.`
  )
}
