/**
 * The start page: the agents the server offers, each with what it does and prompts to try. A prompt starts a session
 * and sends it; "Start" opens an empty session.
 */
import type { AgentSpec } from "@parley/core"
import { Directory } from "@parley/react"
import * as Result from "effect/Result"
import { useState } from "react"
import { explain } from "./errors.js"
import * as Route from "./route.js"

export const AgentPicker = () => {
  const { agents, error, loading } = Directory.useAgents()
  const start = Directory.useStartSession()
  const send = Directory.useSendMessage()
  const [failure, setFailure] = useState<string | undefined>(undefined)
  const begin = async (agent: AgentSpec.AgentSpec, prompt?: string) => {
    setFailure(undefined)
    const session = await start.run(agent)
    if (Result.isFailure(session)) return setFailure(explain(session.failure))
    if (prompt !== undefined) {
      const sent = await send.run(session.success.sessionId, prompt)
      if (Result.isFailure(sent)) setFailure(explain(sent.failure))
    }
    Route.go({ _tag: "Session", sessionId: session.success.sessionId })
  }
  const busy = start.pending || send.pending
  return (
    <section className="picker" aria-labelledby="picker-title">
      <h2 id="picker-title">Start a session</h2>
      <p className="muted">
        Pick an agent. Its questions to you — approvals, forms, sign-ins — appear in the conversation.
      </p>
      {loading && <p className="muted">Loading the agents…</p>}
      {error !== undefined && agents.length === 0 && <p role="alert" className="error">{explain(error)}</p>}
      <ul className="agents">
        {agents.map((agent) => {
          const { examples, summary } = Directory.describe(agent)
          return (
            <li key={agent.name} className="card agent" aria-labelledby={`agent-${agent.name}`}>
              <h3 id={`agent-${agent.name}`}>{agent.name}</h3>
              <p>{summary === "" ? "No description." : summary}</p>
              {examples.length > 0 && (
                <>
                  <p className="muted">Try:</p>
                  <ul className="prompts">
                    {examples.map((example) => (
                      <li key={example}>
                        <button
                          type="button"
                          className="prompt"
                          disabled={busy}
                          onClick={() => void begin(agent, example)}
                        >
                          {example}
                        </button>
                      </li>
                    ))}
                  </ul>
                </>
              )}
              <button
                type="button"
                className="primary"
                disabled={busy}
                aria-label={`Start a session with ${agent.name}`}
                onClick={() => void begin(agent)}
              >
                Start
              </button>
            </li>
          )
        })}
      </ul>
      <p role="alert" className="error">{failure ?? ""}</p>
    </section>
  )
}
