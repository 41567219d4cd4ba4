/**
 * The session app: the header (connection banner, theme toggle), the side panel (inbox, sessions) and the page of the
 * route — the agent picker, or a session.
 */
import { Connection, Directory } from "@parley/react"
import { AgentPicker } from "./AgentPicker.js"
import { Banner } from "./Banner.js"
import * as Route from "./route.js"
import { SessionView } from "./SessionView.js"
import { Sidebar } from "./Sidebar.js"
import * as Theme from "./theme.js"
import * as Waiting from "./waiting.js"

export const Header = (props: { readonly onForgetKey?: (() => void) | undefined }) => {
  const { theme, toggle } = Theme.useTheme()
  return (
    <header className="top">
      <a className="brand" href="#/">Parley</a>
      <span className="spacer" />
      <button
        type="button"
        className="ghost"
        onClick={toggle}
        aria-label={theme === "dark" ? "Use the light theme" : "Use the dark theme"}
      >
        {theme === "dark" ? "☀ Light" : "☾ Dark"}
      </button>
      {props.onForgetKey !== undefined && (
        <button type="button" className="ghost" onClick={props.onForgetKey}>Change key</button>
      )}
    </header>
  )
}

const Pages = (props: { readonly onKeyRefused: () => void }) => {
  const route = Route.useRoute()
  const sessions = Directory.useSessions()
  const connection = Connection.useConnection()
  if (connection._tag === "KeyRefused") props.onKeyRefused()
  const current = route._tag === "Session" ? route.sessionId : undefined
  return (
    <div className="layout">
      <Sidebar current={current} sessions={sessions} />
      <main id="main">
        {route._tag === "Session" ? <SessionView key={route.sessionId} sessionId={route.sessionId} /> : <AgentPicker />}
      </main>
    </div>
  )
}

export const App = (props: { readonly onForgetKey: () => void; readonly onKeyRefused: () => void }) => (
  <Waiting.Provider>
    <Header onForgetKey={props.onForgetKey} />
    <Banner />
    <Pages onKeyRefused={props.onKeyRefused} />
  </Waiting.Provider>
)
