/**
 * The `parley` executable (bin/parley.js, a child process) against a real server on 127.0.0.1 (a SQLite file): what
 * it lists, how it answers (checked before sending: a mismatch exits 2 and sends nothing), its errors and exit codes,
 * the events it prints (from a cursor, and followed across a server restart), the grants it lists and revokes. The
 * help of every command is Help.test.ts's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Answer, Principal, Transport as TransportModule } from "@parley/core"
import type { Transport } from "@parley/core"
import { Effect, Schedule, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Fixture from "./fixtures/server.js"

/** A session of the locator and a turn blocked on its approval: the approval, once open. */
const blockedTurn = (transport: Transport.Service) =>
  Effect.gen(function*() {
    const session = yield* transport.createSession(Fixture.locator.spec)
    const turn = yield* transport.sendMessage(session.sessionId, "Where am I?")
    const approval = yield* waitOpen(transport, session.sessionId, "approval")
    return { session, turn, approval }
  })

const waitOpen = (transport: Transport.Service, sessionId: string, kind: "approval" | "client_tool") =>
  transport.listOpen().pipe(
    Effect.map((open) => open.find((entry) => entry.callback.sessionId === sessionId && entry.callback.kind === kind)),
    Effect.flatMap((found) => (found === undefined ? Effect.fail("not yet" as const) : Effect.succeed(found))),
    Effect.retry({ times: 300, schedule: Schedule.spaced("100 millis") }),
    Effect.orDie
  )

const storedTags = (transport: Transport.Service, sessionId: string, until: (tag: string) => boolean) =>
  transport.events(sessionId as never, 0).pipe(
    Stream.filter((event) => event._tag !== "MessageDelta"),
    Stream.takeUntil((event) => until(event._tag)),
    Stream.runCollect,
    Effect.orDie
  )

const seqs = (stdout: string) =>
  stdout.split("\n").map((line) => /^\s*(\d+) /.exec(line)?.[1]).filter((seq) => seq !== undefined).map(Number)

describe("parley", { concurrent: false }, () => {
  it.live(
    "callbacks list: an aligned table of what waits, --json the OpenCallbacks, --kind filters",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const { approval, session } = yield* blockedTurn(transport)
        const env = { PARLEY_URL: server.url }

        const table = yield* Fixture.parley(["callbacks", "list"], env)
        assert.strictEqual(table.code, 0, table.stderr)
        const [header, row] = table.stdout.split("\n")
        assert.match(header, /^ID\s+KIND\s+TOOL\s+ARGUMENTS\s+SESSION\s+AGE\s+EXPIRES IN$/)
        assert.match(row, new RegExp(`^${approval.callback.id}\\s+approval\\s+client\\.get_location\\s+\\{\\}\\s+`))
        assert.include(row, session.sessionId)
        assert.match(row, /\s59m$/, "expires in about an hour")
        assert.strictEqual(header.indexOf("KIND"), row.indexOf("approval"), "aligned")

        const json = yield* Fixture.parley(["callbacks", "list", "--json"], env)
        assert.strictEqual(json.code, 0, json.stderr)
        const decoded = Schema.decodeUnknownSync(Schema.Array(TransportModule.OpenCallback))(JSON.parse(json.stdout))
        assert.deepStrictEqual(decoded.map((entry) => entry.callback.id), [approval.callback.id])
        assert.deepStrictEqual(decoded[0].answerSchema, approval.answerSchema)

        const none = yield* Fixture.parley(["callbacks", "list", "--kind", "client_tool"], env)
        assert.strictEqual(none.stdout.trim(), "nothing waits for an answer")

        const sessions = yield* Fixture.parley(["sessions", "list"], env)
        assert.match(sessions.stdout, new RegExp(`${session.sessionId}\\s+locator\\s+-\\s+`))
        const show = yield* Fixture.parley(["sessions", "show", session.sessionId], env)
        assert.strictEqual(show.code, 0, show.stderr)
        assert.match(show.stdout, /turn_\S+\s+blocked\s+"Where am I\?"/)
        assert.include(show.stdout, approval.callback.id)
      }),
    { timeout: 180_000 }
  )

  it.live(
    "answer: a mismatch prints its one line and the fix, exits 2 and sends nothing; --schema on request; then ok",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const { approval, session } = yield* blockedTurn(transport)
        const env = { PARLEY_URL: server.url }

        const wrongKind = yield* Fixture.parley(
          ["answer", approval.callback.id, "--result", "{\"city\":\"Lyon\"}"],
          env
        )
        assert.strictEqual(wrongKind.code, 2)
        assert.strictEqual(
          wrongKind.stderr,
          "parley: nothing was sent: an approval callback takes AllowApproval or DenyApproval, not ClientToolResult\n" +
            "  hint: answer an approval with allow [--arguments '<json>'] or deny [--reason …], and --remember to " +
            `keep it; \`parley answer ${approval.callback.id} --schema\` prints the answer it expects\n`,
          "the one line first, and no schema"
        )

        const schema = yield* Fixture.parley(["answer", approval.callback.id, "--schema"], env)
        assert.strictEqual(schema.code, 0, schema.stderr)
        assert.deepStrictEqual(JSON.parse(schema.stdout), approval.answerSchema, "the schema, on request")
        const stillBlocked = yield* transport.listOpen()
        assert.isTrue(stillBlocked.some((entry) => entry.callback.id === approval.callback.id), "--schema sent nothing")

        const allowed = yield* Fixture.parley(["answer", approval.callback.id, "allow"], env)
        assert.strictEqual(allowed.code, 0, allowed.stderr)
        assert.include(allowed.stdout, `answered ${approval.callback.id}`)

        const tool = yield* waitOpen(transport, session.sessionId, "client_tool")
        const wrongResult = yield* Fixture.parley(["answer", tool.callback.id, "--result", "{\"city\":42}"], env)
        assert.strictEqual(wrongResult.code, 2)
        assert.match(wrongResult.stderr, /^parley: nothing was sent: .*city must be string\n/)
        assert.include(
          wrongResult.stderr,
          "hint: answer a client tool with --result '<json>', the result of client.get_location"
        )
        assert.notInclude(wrongResult.stderr, "\"properties\"", "no schema unless asked for")
        const stillOpen = yield* transport.listOpen()
        assert.isTrue(stillOpen.some((entry) => entry.callback.id === tool.callback.id), "nothing was sent")

        const notJson = yield* Fixture.parley(["answer", tool.callback.id, "--result", "{city"], env)
        assert.strictEqual(notJson.code, 2)
        assert.include(notJson.stderr, "--result is not JSON")

        const answered = yield* Fixture.parley(["answer", tool.callback.id, "--result", "{\"city\":\"Lyon\"}"], env)
        assert.strictEqual(answered.code, 0, answered.stderr)
        const events = yield* storedTags(transport, session.sessionId, (tag) => tag === "TurnEnded")
        const resolved = Array.from(events).filter((event) => event._tag === "CallbackResolved")
        assert.deepStrictEqual(
          resolved.map((event) => event._tag === "CallbackResolved" ? event.answer?._tag : undefined),
          ["AllowApproval", "ClientToolResult"],
          "one answer each: the refused ones were never sent"
        )

        const again = yield* Fixture.parley(["answer", approval.callback.id, "allow"], env)
        assert.strictEqual(again.code, 1)
        assert.include(again.stderr, `callback ${approval.callback.id} is not open`)
        assert.include(again.stderr, "hint: `parley callbacks list`")

        const noVerdict = yield* Fixture.parley(["answer", tool.callback.id], env)
        assert.strictEqual(noVerdict.code, 1, "not open any more: that comes first")
      }),
    { timeout: 180_000 }
  )

  it.live(
    "answer: allow with edited arguments, --remember and --label; grants list shows the grant, revoke ends it",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const env = { PARLEY_URL: server.url }
        const session = yield* transport.createSession(Fixture.mover.spec)
        yield* transport.sendMessage(session.sessionId, "Take me to Paris")
        const approval = yield* waitOpen(transport, session.sessionId, "approval")

        const badArguments = yield* Fixture.parley(
          ["answer", approval.callback.id, "allow", "--arguments", "{\"city\":42}"],
          env
        )
        assert.strictEqual(badArguments.code, 2, badArguments.stderr)
        assert.match(badArguments.stderr, /^parley: nothing was sent: .*city/)
        const misplaced = yield* Fixture.parley(["answer", approval.callback.id, "deny", "--arguments", "{}"], env)
        assert.strictEqual(misplaced.code, 2)
        assert.include(misplaced.stderr, "--arguments goes with allow")

        const allowed = yield* Fixture.parley([
          "answer",
          approval.callback.id,
          "allow",
          "--arguments",
          "{\"city\":\"Lyon\"}",
          "--remember",
          "session",
          "--label",
          "alice@example.com"
        ], env)
        assert.strictEqual(allowed.code, 0, allowed.stderr)
        const tool = yield* waitOpen(transport, session.sessionId, "client_tool")
        assert.deepStrictEqual(
          tool.callback._tag === "OpenClientToolCall" ? tool.callback.request.arguments : undefined,
          { city: "Lyon" },
          "the call runs with the edited arguments"
        )
        const events = yield* storedTags(transport, session.sessionId, (tag) => tag === "ApprovalGranted")
        const resolved = Array.from(events).find((event) => event._tag === "CallbackResolved")
        assert.deepStrictEqual(
          resolved?._tag === "CallbackResolved" && resolved.answeredBy !== undefined
            ? Principal.claimed(resolved.answeredBy)
            : undefined,
          new Principal.Client({ label: "alice@example.com" }),
          "the label, recorded as who answered"
        )

        const grants = yield* Fixture.parley(["grants", "list"], env)
        assert.strictEqual(grants.code, 0, grants.stderr)
        const [header, row] = grants.stdout.split("\n")
        assert.match(header, /^GRANT\s+TOOL\s+DECISION\s+SCOPE\s+SESSION\s+GRANTED$/)
        const grantId = /^(grant_\S+)/.exec(row)?.[1] ?? ""
        assert.match(row, new RegExp(`^${grantId}\\s+client\\.move_to\\s+allow\\s+session\\s+${session.sessionId}\\s+`))
        assert.include(row, "alice@example.com")
        const one = yield* Fixture.parley(["grants", "list", "--session", session.sessionId, "--json"], env)
        assert.deepStrictEqual(JSON.parse(one.stdout).map((grant: { grantId: string }) => grant.grantId), [grantId])

        const revoked = yield* Fixture.parley(["grants", "revoke", grantId, "--label", "bob"], env)
        assert.strictEqual(revoked.code, 0, revoked.stderr)
        assert.include(revoked.stdout, `revoked ${grantId}`)
        const none = yield* Fixture.parley(["grants", "list"], env)
        assert.strictEqual(none.stdout.trim(), "no grants in force")
        const again = yield* Fixture.parley(["grants", "revoke", grantId, "--session", session.sessionId], env)
        assert.strictEqual(again.code, 1)
        assert.strictEqual(
          again.stderr,
          `parley: session ${session.sessionId} has no grant ${grantId} in force: revoked already, or never made\n` +
            `  hint: \`parley grants list --session ${session.sessionId}\` shows the grants in force\n`
        )
      }),
    { timeout: 180_000 }
  )

  it.live(
    "answer with a filter: one answer to every callback it matches, a line each; --dry-run sends nothing",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const transport = yield* Fixture.transport(server.url)
        const first = yield* blockedTurn(transport)
        const second = yield* blockedTurn(transport)
        const env = { PARLEY_URL: server.url }

        const dry = yield* Fixture.parley(["answer", "allow", "--tool", "client.get_location", "--dry-run"], env)
        assert.strictEqual(dry.code, 0, dry.stderr)
        const wouldBe = dry.stdout.trim().split("\n")
        assert.strictEqual(wouldBe.length, 2, dry.stdout)
        for (const line of wouldBe) {
          assert.match(line, /^would answer cb_\S+ \(approval client\.get_location, session ses_/)
        }
        assert.strictEqual((yield* transport.listOpen()).length, 2, "a dry run sends nothing")

        const one = yield* Fixture.parley(
          ["answer", "allow", "--session", first.session.sessionId, "--kind", "approval", "--label", "alice"],
          env
        )
        assert.strictEqual(one.code, 0, one.stderr)
        assert.strictEqual(
          one.stdout.trim(),
          `answered ${first.approval.callback.id} (approval client.get_location, session ${first.session.sessionId})`
        )
        const tool = yield* waitOpen(transport, first.session.sessionId, "client_tool")
        // The approval of the second session, and the first session's client tool: the approval's answer does not
        // fit the client tool, which is refused (exit 1) and stays open.
        const both = yield* Fixture.parley(["answer", "allow", "--tool", "get_location"], env)
        assert.strictEqual(both.code, 1, both.stdout)
        assert.include(both.stdout, `answered ${second.approval.callback.id} (approval client.get_location`)
        assert.match(
          both.stdout,
          new RegExp(`refused  ${tool.callback.id} \\(client_tool client\\.get_location.*\\): `)
        )
        assert.include(both.stderr, "1 of 2 callbacks refused the answer")
        assert.isDefined((yield* transport.listOpen()).find((open) => open.callback.id === tool.callback.id))

        const results = yield* Fixture.parley(
          ["answer", "--result", "{\"city\":\"Lyon\"}", "--kind", "client_tool", "--older-than", "0s"],
          env
        )
        assert.strictEqual(results.code, 0, results.stderr)
        assert.include(results.stdout, `answered ${tool.callback.id} (client_tool client.get_location`)
        const none = yield* Fixture.parley(["answer", "allow", "--older-than", "2h"], env)
        assert.strictEqual(none.stdout.trim(), "no open callback matches")
        const badAge = yield* Fixture.parley(["answer", "allow", "--older-than", "soon"], env)
        assert.strictEqual(badAge.code, 2)
        assert.include(badAge.stderr, "--older-than soon is not a duration")
        const noId = yield* Fixture.parley(["answer"], env)
        assert.strictEqual(noId.code, 2)
        assert.include(noId.stderr, "no callback id given")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "errors are one line and a hint: an unreachable server, a refused key, a bad option (exit 2)",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const server = yield* Fixture.start(path.join(dir, "sessions.db"))
        const unreachable = yield* Fixture.parley(["callbacks", "list", "--url", "http://127.0.0.1:9"])
        assert.strictEqual(unreachable.code, 1)
        assert.strictEqual(
          unreachable.stderr,
          "parley: cannot reach a Parley server at http://127.0.0.1:9\n" +
            "  hint: start one with `parley serve` (or `npm start`), or point --url / PARLEY_URL at yours\n"
        )
        const refused = yield* Fixture.parley(["callbacks", "list", "--key", "wrong"], { PARLEY_URL: server.url })
        assert.strictEqual(refused.code, 1)
        assert.include(refused.stderr, `parley: the server at ${server.url} refused the API key (from --key)`)
        assert.include(refused.stderr, "hint: use the key the server printed at start")
        const usage = yield* Fixture.parley(["callbacks", "list", "--kind", "nope"], { PARLEY_URL: server.url })
        assert.strictEqual(usage.code, 2)
        const noKey = yield* Fixture.parley(["callbacks", "list"], {
          PARLEY_URL: server.url,
          PARLEY_API_KEY: "",
          PARLEY_DATA_DIR: dir
        })
        assert.strictEqual(noKey.code, 1)
        assert.include(noKey.stderr, "no API key")

        // In the user's terms, never a function of the server's or the client's.
        const env = { PARLEY_URL: server.url }
        const noSession = yield* Fixture.parley(["sessions", "show", "ses_nope"], env)
        assert.strictEqual(noSession.code, 1)
        assert.strictEqual(
          noSession.stderr,
          "parley: no session ses_nope for this key\n  hint: `parley sessions list` shows the sessions of this key\n"
        )
        const noEvents = yield* Fixture.parley(["events", "ses_nope", "--follow"], env)
        assert.strictEqual(noEvents.stderr, noSession.stderr)
        const notAnId = yield* Fixture.parley(["sessions", "show", "nope"], env)
        assert.strictEqual(notAnId.code, 2)
        assert.include(notAnId.stderr, "a session id looks like ses_")
        for (const output of [noSession, noEvents, notAnId]) {
          assert.notMatch(output.stderr, /\b[A-Z][A-Za-z]+\.[a-z][A-Za-z]+:/, "no Module.method")
        }
      }),
    { timeout: 180_000 }
  )

  it.live(
    "events: one line per event, from a cursor (--from); --follow goes on across a server restart",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const filename = path.join(dir, "sessions.db")
        const first = yield* Fixture.startProcess(filename)
        const transport = yield* Fixture.transport(first.url)
        const { approval, session } = yield* blockedTurn(transport)
        const env = { PARLEY_URL: first.url }

        const all = yield* Fixture.parley(["events", session.sessionId], env)
        assert.strictEqual(all.code, 0, all.stderr)
        const allSeqs = seqs(all.stdout)
        assert.deepStrictEqual(allSeqs, allSeqs.map((_, index) => index), "every stored event once, in order")
        assert.match(all.stdout, /TurnBlocked on cb_/)
        const from = yield* Fixture.parley(["events", session.sessionId, "--from", "3"], env)
        assert.deepStrictEqual(seqs(from.stdout), allSeqs.slice(3))

        const follower = yield* Fixture.spawnParley(["events", session.sessionId, "--follow"], env)
        yield* follower.waitFor("TurnBlocked")

        yield* first.stop
        const second = yield* Fixture.startProcess(filename, first.port)
        const again = yield* Fixture.transport(second.url)
        // The test process's fetch may still hold a connection to the stopped server: a failed request is tried again.
        yield* again.answer({
          sessionId: session.sessionId,
          turnId: approval.callback.turnId,
          callbackId: approval.callback.id,
          answer: new Answer.AllowApproval()
        }).pipe(
          Effect.retry({
            times: 5,
            schedule: Schedule.spaced("200 millis"),
            while: (e) => e._tag === "TransportFailure"
          })
        )
        const tool = yield* waitOpen(again, session.sessionId, "client_tool")
        yield* again.answer({
          sessionId: session.sessionId,
          turnId: tool.callback.turnId,
          callbackId: tool.callback.id,
          answer: Answer.ClientToolResult.success({ city: "Lyon" })
        })
        yield* follower.waitFor("TurnEnded")
        const followed = seqs(follower.stdout())
        assert.deepStrictEqual(followed, followed.map((_, index) => index), "no gap, no duplicate across the restart")
        assert.match(follower.stdout(), /CallbackResolved cb_\S+ answered AllowApproval/)
        assert.match(follower.stdout(), /TurnEnded Completed You are in \{"city":"Lyon"\}\./)
      }),
    { timeout: 180_000 }
  )

  it.live(
    "serve: --port and --database; the local key in ./.parley/api-key, which the other commands find from here",
    () =>
      Effect.gen(function*() {
        const dir = yield* Fixture.tempDir
        const database = path.join(dir, "elsewhere.db")
        const server = yield* Fixture.spawnParley(
          ["serve", "--port", "0", "--database", database, "--log-format", "json", "--log-level", "info"],
          { PARLEY_API_KEY: "" },
          dir
        )
        yield* server.waitFor("npx parley callbacks list")
        const url = /session app: (\S+)\/#key=/.exec(server.stdout())?.[1] ?? ""
        assert.include(server.stdout(), `Parley server on ${url} (${database})`)
        assert.include(server.stdout(), `API key (kept in ${path.join(dir, ".parley", "api-key")})`)
        assert.isTrue(fs.existsSync(database))
        const listed = yield* Fixture.parley(["callbacks", "list"], { PARLEY_URL: url, PARLEY_API_KEY: "" }, dir)
        assert.strictEqual(listed.code, 0, listed.stderr)
        assert.strictEqual(listed.stdout.trim(), "nothing waits for an answer")
        assert.match(server.stdout(), /"route":"\/callbacks".*"status":200|"status":200.*"route":"\/callbacks"/)
        const page = yield* Effect.promise(() => fetch(`${url}/`).then((response) => response.text()))
        assert.include(page, "<title>Parley</title>", "the session app at /")
      }),
    { timeout: 180_000 }
  )
})
