/**
 * `npm run serve`: a Parley server for the guides' agents, on this machine (what `npm start` runs too).
 *
 * - `PARLEY_PORT` (default 8787), on `PARLEY_HOST` (default 127.0.0.1).
 * - Sessions in `.parley/sessions.db` at the repository root; `PARLEY_DATA_DIR` moves the `.parley/` folder;
 *   `PARLEY_DATABASE_URL=postgres://…` keeps them in PostgreSQL instead (several servers may share it).
 * - `PARLEY_API_KEYS=key:tenant,key2:tenant2`; when none is set, one local key is created, kept in
 *   `.parley/api-key` (mode 0600) and printed at start.
 * - Models: the agents' real models (`@parley/mistral`) when `MISTRAL_API_KEY` is set, the guides' scripted brains
 *   otherwise; the demo `gmail` mailbox as connector (see `shared/demo.ts`).
 * - The session app at `/`; the API reference at `/docs`.
 * - Quiet: after the banner (the session app's URL with the local key in its fragment, one click away), only warnings
 *   and errors; `PARLEY_LOG_LEVEL=info` adds a line per request, in logfmt (`PARLEY_LOG_FORMAT=json` for JSON).
 * - SIGINT / SIGTERM: the event streams close (clients resume by cursor), in-flight appends finish, leases are
 *   released; open callbacks stay open for the next start.
 *
 * The server itself is `Serve.launch` of `@parley/cli` (`npx parley serve` runs the same).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Serve } from "@parley/cli"
import * as path from "node:path"
import { demo } from "./shared/demo.js"

const settings = Serve.settingsFromEnv(process.env, path.resolve(import.meta.dirname, "..", ".parley"))

NodeRuntime.runMain(Serve.launch(settings, demo))
