/**
 * The session app's entry: the key (from the link `npm start` prints, or asked for once per browser), a
 * `ParleyClient` on this page's origin with it — the hooks of `@parley/react` do every request, stream and answer —
 * and the app. A key the server refuses is asked for again.
 */
import { ParleyClient } from "@parley/react"
import type { ReactNode } from "react"
import { StrictMode, useEffect, useMemo, useState } from "react"
import { createRoot } from "react-dom/client"
import { App, Header } from "./App.js"
import * as Key from "./key.js"
import * as SentAnswers from "./sentAnswers.js"

const KeyForm = (props: { readonly error: string; readonly onKey: (key: string) => void }) => {
  const [value, setValue] = useState("")
  return (
    <main id="main" className="key">
      <form
        className="card"
        aria-labelledby="key-title"
        onSubmit={(event) => {
          event.preventDefault()
          if (value.trim() !== "") props.onKey(value.trim())
        }}
      >
        <h2 id="key-title">Your key</h2>
        <label htmlFor="key-input">API key</label>
        <p className="muted">
          Printed by <code>npm start</code>, kept in <code>.parley/api-key</code>. Asked once per browser.
        </p>
        <input
          id="key-input"
          type="password"
          autoComplete="off"
          required
          value={value}
          onChange={(event) => setValue(event.target.value)}
        />
        <button type="submit" className="primary">Use this key</button>
        <p role="alert" className="error">{props.error}</p>
      </form>
    </main>
  )
}

const Root = (): ReactNode => {
  const [key, setKey] = useState(Key.read)
  const [error, setError] = useState("")
  const client = useMemo(
    () =>
      key === ""
        ? undefined
        : ParleyClient.make({
          url: window.location.origin,
          apiKey: key,
          sentAnswers: SentAnswers.make(),
          sendRetryFor: "20 seconds"
        }),
    [key]
  )
  useEffect(() => () => void client?.dispose(), [client])
  if (client === undefined) {
    return (
      <>
        <Header />
        <KeyForm
          error={error}
          onKey={(given) => {
            Key.save(given)
            setError("")
            setKey(given)
          }}
        />
      </>
    )
  }
  return (
    <ParleyClient.Provider client={client}>
      <App
        onForgetKey={() => {
          Key.forget()
          setKey("")
        }}
        onKeyRefused={() =>
          queueMicrotask(() => {
            Key.forget()
            setError("The server refused this key.")
            setKey("")
          })}
      />
    </ParleyClient.Provider>
  )
}

Key.fromLink()
createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Root />
  </StrictMode>
)
