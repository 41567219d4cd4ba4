import { assert, describe, it } from "@effect/vitest"
import * as Core from "@parley/core"
import * as fs from "node:fs"
import * as path from "node:path"

// The client package carries no storage format: the projection and its snapshot codec are @parley/log's.

const srcDir = path.join(import.meta.dirname, "..", "src")

describe("@parley/core's boundary", () => {
  it("exports no TreeState and no snapshot codec", () => {
    for (const name of ["TreeState", "Snapshot", "SnapshotCodec", "SessionStore", "StoreError"]) {
      assert.notProperty(Core, name)
    }
    for (const [name, module] of Object.entries(Core)) {
      for (
        const codec of ["encodeSnapshot", "decodeSnapshot", "snapshotVersion", "encode", "decode", "evolve", "fold"]
      ) {
        assert.notProperty(module, codec, `${name}.${codec}`)
      }
    }
  })

  it("has no module of the log layer and imports none", () => {
    const files = fs.readdirSync(srcDir, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"))
    assert.notInclude(files, "TreeState.ts")
    for (const file of files) {
      assert.notInclude(fs.readFileSync(path.join(srcDir, file), "utf8"), "@parley/log", file)
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(srcDir, "..", "package.json"), "utf8"))
    assert.notProperty({ ...manifest.dependencies, ...manifest.peerDependencies }, "@parley/log")
  })
})
