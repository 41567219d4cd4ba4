/**
 * The grants in force for a session ("remember" answers: later calls of a tool decided without asking), each
 * revocable: calls of its tool ask again.
 */
import { Directory } from "@parley/react"
import * as Result from "effect/Result"
import { useState } from "react"
import { explain } from "./errors.js"
import * as Format from "./format.js"

export const Grants = (props: { readonly sessionId: string }) => {
  const { grants, revoke } = Directory.useGrants(props.sessionId)
  const [error, setError] = useState<string | undefined>(undefined)
  if (grants.length === 0) return null
  return (
    <section className="grants" aria-labelledby="grants-title">
      <h3 id="grants-title">Remembered answers</h3>
      <ul>
        {grants.map((grant) => (
          <li key={grant.grantId} data-grant={grant.grantId}>
            <span>
              <strong>{grant.decision === "allow" ? "Allow" : "Deny"}</strong> <code>{grant.toolPattern}</code> for the
              {" "}
              {grant.scope === "tree" ? "session and its subagents" : "session"}
              {Format.who(grant.grantedBy) === undefined ? "" : `, by ${Format.who(grant.grantedBy)}`}
            </span>
            <button
              type="button"
              aria-label={`Revoke ${grant.decision} ${grant.toolPattern}`}
              onClick={async () => {
                const result = await revoke(grant.grantId)
                setError(Result.isFailure(result) ? explain(result.failure) : undefined)
              }}
            >
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <p role="alert" className="error">{error ?? ""}</p>
    </section>
  )
}
