/**
 * The example app's entry: the key from the link (`#key=…`, kept in the browser's storage) or asked for once, the
 * client on this page's origin (where `serve.ts` forwards the API to the Parley server), the app rendered.
 */
import { ParleyClient } from "@parley/react"
import { createRoot } from "react-dom/client"
import { App } from "./App.js"

const fromLink = new URLSearchParams(window.location.hash.slice(1)).get("key")
if (fromLink !== null) {
  window.localStorage.setItem("parley.key", fromLink)
  window.history.replaceState(null, "", window.location.pathname + window.location.search)
}
const apiKey = window.localStorage.getItem("parley.key") ?? window.prompt("The API key (npm start prints it)") ?? ""
window.localStorage.setItem("parley.key", apiKey)

const client = ParleyClient.make({ url: window.location.origin, apiKey })
const sessionId = new URLSearchParams(window.location.search).get("session") ?? undefined

createRoot(document.getElementById("root")!).render(
  <ParleyClient.Provider client={client}>
    <App sessionId={sessionId} />
  </ParleyClient.Provider>
)
