import { assert, describe, it } from "@effect/vitest"
import type { SessionStore } from "@parley/log"
import type * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
import * as fs from "node:fs"
import * as path from "node:path"

// The store contract runs on @parley/log's own port, not on a copy of it: the two types are one (checked by tsc).

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const portIsLogs: Same<SessionStoreSuite.Store, SessionStore.Services> = true

const packageDir = path.join(import.meta.dirname, "..")

describe("@parley/testing's boundary", () => {
  it("types the store contract with @parley/log's SessionStore.Services", () => {
    assert.isTrue(portIsLogs)
  })

  it("depends on @parley/log and never imports @parley/runtime", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(packageDir, "package.json"), "utf8"))
    assert.property(manifest.dependencies, "@parley/log")
    const all = { ...manifest.dependencies, ...manifest.peerDependencies, ...manifest.devDependencies }
    assert.notProperty(all, "@parley/runtime")
    const srcDir = path.join(packageDir, "src")
    for (const file of fs.readdirSync(srcDir, { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".ts")) continue
      // code lines (not doc comments) naming the runtime package
      const code = fs.readFileSync(path.join(srcDir, file), "utf8").split("\n").filter((line) =>
        !/^\s*(\*|\/\/|\/\*)/.test(line)
      )
      assert.isFalse(code.some((line) => /["']@parley\/runtime/.test(line)), file)
    }
  })
})
