/**
 * The connection banner: shown while the server is unreachable (every request of the page tells: the event streams,
 * the polls, answers), gone by itself once one gets through again.
 */
import { Connection } from "@parley/react"

export const Banner = () => {
  const connection = Connection.useConnection()
  return (
    <div className="banner-slot" aria-live="assertive">
      {connection._tag === "Unreachable" && (
        <p className="banner" role="alert">
          The server is unreachable. Trying again… Answers are not sent until it is back.
        </p>
      )}
    </div>
  )
}
