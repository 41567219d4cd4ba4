/**
 * Helpers for the edge of a program: is this file the one `tsx` was asked to run, and how a final turn state
 * prints.
 */
import type { TurnState } from "@parley/core"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

/** Whether the module at `moduleUrl` (its `import.meta.url`) is the program being run, not an import. */
export const isEntry = (moduleUrl: string): boolean =>
  process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === moduleUrl

/** A turn state as the guides print it: `Completed <text>`, or the state's tag (and why, for `Failed`). */
export const describeState = (state: TurnState.TurnState): string => {
  switch (state._tag) {
    case "Completed":
      return `Completed ${state.text}`
    case "Failed":
      return `Failed ${state.error.message}`
    case "Blocked":
      return `Blocked on ${state.callbacks.map((callback) => callback.kind).join(", ")}`
    case "Cancelled":
      return "Cancelled"
  }
}
