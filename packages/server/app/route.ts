/**
 * The app's routes, in the URL's hash (the server serves one page): `#/` the start page (the agent picker),
 * `#/sessions/<id>` a session. A link to a session opens it directly, in any tab.
 */
import { useEffect, useState } from "react"

export type Route = { readonly _tag: "Home" } | { readonly _tag: "Session"; readonly sessionId: string }

export const parse = (hash: string): Route => {
  const match = /^#\/sessions\/([A-Za-z0-9_-]+)$/.exec(hash)
  return match === null ? { _tag: "Home" } : { _tag: "Session", sessionId: match[1] }
}

export const href = (route: Route): string => route._tag === "Home" ? "#/" : `#/sessions/${route.sessionId}`

export const go = (route: Route): void => {
  window.location.hash = href(route)
}

export const useRoute = (): Route => {
  const [route, setRoute] = useState(() => parse(window.location.hash))
  useEffect(() => {
    const changed = () => setRoute(parse(window.location.hash))
    window.addEventListener("hashchange", changed)
    return () => window.removeEventListener("hashchange", changed)
  }, [])
  return route
}
