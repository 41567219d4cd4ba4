/**
 * Secrets of trees: `saveSecret` keeps one value per tree and name (a second save replaces it), `loadSecret` returns
 * it as saved, `deleteSecret` forgets it, trees and names do not mix, and two stores over one database share them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type MakeDatabase, otherTreeId, tree, treeId } from "./fixtures.js"

export const secrets = (makeDatabase: MakeDatabase): void => {
  describe("secrets", () => {
    it.effect("saved, replaced, shared by another store, kept apart by tree and name, deleted", () =>
      Effect.gen(function*() {
        const database = yield* makeDatabase
        const a = yield* database.open
        const b = yield* database.open
        yield* a.eventLog.createTree(tree())
        assert.deepStrictEqual(yield* a.secrets.load(treeId, "connector:mail"), Option.none())
        yield* a.secrets.save(treeId, "connector:mail", "v1.ciphertext")
        yield* a.secrets.save(treeId, "connector:mail", "v1.other")
        yield* a.secrets.save(treeId, "connector:files", "v1.files")
        yield* a.secrets.save(otherTreeId, "connector:mail", "v1.tree-b")
        assert.deepStrictEqual(yield* b.secrets.load(treeId, "connector:mail"), Option.some("v1.other"))
        assert.deepStrictEqual(yield* b.secrets.load(treeId, "connector:files"), Option.some("v1.files"))
        assert.deepStrictEqual(yield* b.secrets.load(otherTreeId, "connector:mail"), Option.some("v1.tree-b"))
        yield* b.secrets.delete(treeId, "connector:mail")
        assert.deepStrictEqual(yield* a.secrets.load(treeId, "connector:mail"), Option.none())
        assert.deepStrictEqual(yield* a.secrets.load(treeId, "connector:files"), Option.some("v1.files"))
      }))
  })
}
