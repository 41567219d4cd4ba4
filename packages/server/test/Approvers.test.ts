/**
 * Who may answer, over plain HTTP: a key's roles come from the server's configuration (`keys: [{ key, tenant, roles }]`,
 * `PARLEY_API_KEYS=key:tenant#role+role`); an approval whose rule names `approvers` lists them, a key without the
 * right gets a 403 `NotAllowedToAnswer` and changes nothing, whatever its client claims, and a key with the role
 * answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, AgentSpec, Permissions } from "@parley/core"
import { ParleyServer } from "@parley/server"
import { ScriptedModel } from "@parley/testing"
import { Effect, Redacted, Schema } from "effect"
import { brain, getLocation } from "./fixtures/agents.js"
import { request } from "./fixtures/http.js"
import { keys, serverKeys, sqliteDatabase, sqliteFile, startServer } from "./fixtures/servers.js"

const financeKey = "alice-finance-key-0123456789"

const guarded = Agent.make({
  name: "guarded",
  model: "scripted",
  instructions: "Say where the user is.",
  tools: [getLocation],
  permissions: new Permissions.PermissionPolicy({
    default: "allow",
    rules: [
      new Permissions.PermissionRule({
        tools: ["client.get_location"],
        decision: "ask",
        approvers: new Permissions.Approvers({ roles: ["finance"], principals: [] })
      })
    ]
  })
})

describe("who may answer, over HTTP", () => {
  it("PARLEY_API_KEYS gives a key its roles after its tenant", () => {
    const parsed = ParleyServer.parseKeys("k1:acme#finance+oncall,k2:acme,k3")
    assert.deepStrictEqual(parsed.map((key) => [Redacted.value(key.key), key.tenant, key.roles]), [
      ["k1", "acme", ["finance", "oncall"]],
      ["k2", "acme", undefined],
      ["k3", "default", undefined]
    ])
  })

  it.live(
    "a key without the role: 403 NotAllowedToAnswer, the approval open; a key with it answers",
    () =>
      Effect.gen(function*() {
        const model = yield* ScriptedModel.fromFunction(brain)
        const base = yield* startServer(sqliteDatabase(yield* Effect.orDie(sqliteFile)), model.languageModel, {
          runtimeTools: [],
          server: {
            keys: [...serverKeys, { key: Redacted.make(financeKey), tenant: "alice", roles: ["finance"] }]
          }
        })
        const created = yield* request(`${base}/sessions`, {
          method: "POST",
          key: keys.alice,
          body: Schema.encodeSync(AgentSpec.AgentSpec)(guarded.spec)
        })
        const sessionId = (created.json as { readonly sessionId: string }).sessionId
        const sent = yield* request(`${base}/sessions/${sessionId}/turns`, {
          method: "POST",
          key: keys.alice,
          body: { input: "Where am I?" }
        })
        const turnId = (sent.json as { readonly turnId: string }).turnId
        const waited = yield* request(`${base}/sessions/${sessionId}/turns/${turnId}/wait?timeout=10`, {
          key: keys.alice
        })
        const [callback] = (waited.json as {
          readonly callbacks: ReadonlyArray<
            {
              readonly id: string
              readonly request: { readonly approvers?: { readonly roles: ReadonlyArray<string> } }
            }
          >
        }).callbacks
        // The open callback lists who may answer it.
        assert.deepStrictEqual(callback.request.approvers?.roles, ["finance"])
        const answer = (key: string, query = "") =>
          request(`${base}/sessions/${sessionId}/turns/${turnId}/callbacks/${callback.id}/answer${query}`, {
            method: "POST",
            key,
            body: { _tag: "AllowApproval" }
          })
        // alice's own key has no role; what the client claims (a label) does not give it one.
        for (const refused of [yield* answer(keys.alice), yield* answer(keys.alice, "?label=the-cfo")]) {
          assert.strictEqual(refused.status, 403)
          assert.strictEqual((refused.json as { readonly _tag: string })._tag, "NotAllowedToAnswer")
        }
        const open = yield* request(`${base}/callbacks?sessionId=${sessionId}`, { key: keys.alice })
        assert.strictEqual(open.status, 200)
        assert.include(open.text, callback.id, "the approval is still open")
        const allowed = yield* answer(financeKey, "?label=carol")
        assert.strictEqual(allowed.status, 204)
      }),
    { timeout: 30_000 }
  )
})
