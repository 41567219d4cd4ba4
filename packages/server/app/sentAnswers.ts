/**
 * The request ids of the answers this tab sent, by callback id, kept in the tab's `sessionStorage`: "answered here"
 * stays right after a reload, and another tab (its own storage) never takes this tab's answers for its own.
 */
const storageKey = "parley.sentAnswers"

export const make = (): Map<string, string> => {
  const read = (): Array<[string, string]> => {
    try {
      return JSON.parse(window.sessionStorage.getItem(storageKey) ?? "[]") as Array<[string, string]>
    } catch {
      return []
    }
  }
  const map = new Map<string, string>(read())
  const set = map.set.bind(map)
  map.set = (callbackId, requestId) => {
    set(callbackId, requestId)
    // The newest 500: a tab that answers all day does not fill its storage.
    window.sessionStorage.setItem(storageKey, JSON.stringify([...map].slice(-500)))
    return map
  }
  return map
}
