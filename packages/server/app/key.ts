/**
 * The API key: the browser's, entered once (kept in `localStorage`, which every tab of the origin shares). The link
 * `npm start` prints carries it in the fragment (`/#key=…`): kept, then taken out of the address bar, so that it is
 * neither bookmarked nor shared with the URL. A fragment never reaches the server: no request, no log line carries it.
 */
const storageKey = "parley.key"

export const fromLink = (): void => {
  const given = new URLSearchParams(window.location.hash.slice(1)).get("key")
  if (given === null || given.trim() === "") return
  window.localStorage.setItem(storageKey, given.trim())
  window.history.replaceState(null, "", window.location.pathname + window.location.search)
}

export const read = (): string => window.localStorage.getItem(storageKey) ?? ""

export const save = (key: string): void => window.localStorage.setItem(storageKey, key)

export const forget = (): void => window.localStorage.removeItem(storageKey)
