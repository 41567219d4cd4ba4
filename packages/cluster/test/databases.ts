/**
 * A temporary SQLite file for the tests (removed with the scope).
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect } from "effect"

export const sqliteFile = Effect.map(
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.makeTempDirectoryScoped({ prefix: "parley-cluster-" })),
    Effect.provide(NodeFileSystem.layer)
  ),
  (directory) => `${directory}/sessions.db`
)
