/**
 * The hostile-request load benchmark (issue 35): `npm run bench:hostile` (or `-- --quick`). The bench server
 * (`server.ts`: `ParleyServer.layerSqlite`, default limits and deadlines) in a process of its own; this process
 * times normal requests of one tenant — `GET /sessions/:id`, and a whole turn by plain HTTP (`POST …/turns`, then
 * `…/wait` until it completes) — quietly, then while hostile clients attack it at once:
 *
 * - `--hung=` connections that send their headers a byte at a time and never finish them;
 * - `--oversized=` clients each streaming a 3 MiB chunked body in 64 KiB pieces (`--piece-pause=` 20 ms apart),
 *   over and over;
 * - `--deep=` clients posting bodies nested 5,000 deep (answers, messages, definitions), over and over;
 * - `--garbage=` clients posting bodies of other media types, malformed JSON and unknown fields, over and over.
 *
 * Each attacker sends its next request `--pause=` (100) ms after its last was answered: hundreds of hostile requests
 * at once, about 2,000 a second in all, not an unbounded flood (which on one shared core measures the core).
 *
 * The attackers hold a key of their own (another tenant): the limits per key keep them from the normal tenant's.
 *
 * Prints p50 / p99 of each normal request quietly and under attack, the hostile requests answered by status (and
 * those that got none), and the server's RSS. The target: under attack, p99 within 3× its quiet value plus 5 ms
 * (the machine is shared with the attackers), and every hostile request answered or closed by its deadline.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import { request as httpRequest } from "node:http"
import { connect, type Socket } from "node:net"
import { benchKey, hostileKey } from "./models.js"
import { rssOf, startServer } from "./serverProcess.js"

const quick = process.argv.includes("--quick")
const arg = (name: string, full: number, small: number) => {
  const given = process.argv.find((a) => a.startsWith(`--${name}=`))
  return given === undefined ? (quick ? small : full) : Number(given.split("=")[1])
}
const sizes = {
  samples: arg("samples", 300, 100),
  hung: arg("hung", 300, 100),
  oversized: arg("oversized", 100, 30),
  deep: arg("deep", 100, 30),
  garbage: arg("garbage", 100, 30),
  /** Milliseconds each attacker waits between its requests, and between the pieces of an upload. */
  pause: arg("pause", 100, 100),
  piecePause: arg("piece-pause", 20, 20)
}

const headers = { authorization: `Bearer ${benchKey}`, "content-type": "application/json" }

// ----------------------------------------------------------------------------
// Normal requests
// ----------------------------------------------------------------------------

const call = async (url: string, method: string, body?: unknown) => {
  const response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${url} → ${response.status} ${text.slice(0, 200)}`)
  return text === "" ? undefined : JSON.parse(text) as Record<string, unknown>
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

interface Timings {
  readonly get: ReadonlyArray<number>
  readonly turn: ReadonlyArray<number>
}

/** `samples` of each normal request, one after another. */
const timeNormal = async (url: string, sessionId: string, samples: number): Promise<Timings> => {
  const get: Array<number> = []
  const turn: Array<number> = []
  for (let i = 0; i < samples; i++) {
    let started = performance.now()
    await call(`${url}/sessions/${sessionId}`, "GET")
    get.push(performance.now() - started)
    started = performance.now()
    const sent = await call(`${url}/sessions/${sessionId}/turns`, "POST", { input: `question ${i}` })
    for (;;) {
      const waited = await call(`${url}/sessions/${sessionId}/turns/${String(sent?.turnId)}/wait?timeout=10`, "GET")
      if ((waited?.state as { _tag: string })._tag !== "Running") break
    }
    turn.push(performance.now() - started)
  }
  return { get: get.sort((a, b) => a - b), turn: turn.sort((a, b) => a - b) }
}

// ----------------------------------------------------------------------------
// The attackers
// ----------------------------------------------------------------------------

/** What the hostile requests got: a status each, `none` for a connection closed or reset without an answer. */
const outcomes = new Map<string, number>()
const count = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1)

/** A connection that sends its headers a byte every 200 ms and never finishes them; reopened when closed. */
const hung = (port: number, stopped: () => boolean) => {
  const open = () => {
    if (stopped()) return
    const socket: Socket = connect(port, "127.0.0.1")
    let received = ""
    const text = `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(10_000)}`
    let at = 0
    const timer = setInterval(() => {
      if (at < text.length) socket.write(text[at++])
    }, 200)
    socket.on("data", (data) => (received += data.toString()))
    socket.on("error", () => undefined)
    socket.on("close", () => {
      clearInterval(timer)
      count(`hung: ${/^HTTP\/1\.1 (\d+)/.exec(received)?.[1] ?? "closed"}`)
      open()
    })
  }
  open()
}

/** One POST of `body` pieces, written as fast as the connection takes them; its status. */
const post = (port: number, path: string, contentType: string, pieces: ReadonlyArray<string>) =>
  new Promise<string>((resolve) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      path,
      method: "POST",
      headers: {
        authorization: `Bearer ${hostileKey}`,
        "content-type": contentType,
        "transfer-encoding": "chunked"
      }
    }, (response) => {
      response.resume()
      response.on("end", () => resolve(String(response.statusCode)))
      response.on("error", () => resolve("none"))
    })
    req.on("error", () => resolve("none"))
    let at = 0
    const next = () => {
      if (req.destroyed) return
      if (at === pieces.length) return req.end()
      req.write(pieces[at++], () => setTimeout(next, sizes.piecePause))
    }
    next()
  })

const loop = async (what: string, stopped: () => boolean, send: () => Promise<string>) => {
  while (!stopped()) {
    count(`${what}: ${await send()}`)
    await new Promise((resolve) => setTimeout(resolve, sizes.pause))
  }
}

const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`

// ----------------------------------------------------------------------------
// The run
// ----------------------------------------------------------------------------

const row = (name: string, quiet: ReadonlyArray<number>, attacked: ReadonlyArray<number>) => {
  const q99 = percentile(quiet, 0.99)
  const a99 = percentile(attacked, 0.99)
  const within = a99 <= q99 * 3 + 5
  console.log(
    `${name}: p50 ${percentile(quiet, 0.5).toFixed(2)} → ${percentile(attacked, 0.5).toFixed(2)} ms, ` +
      `p99 ${q99.toFixed(2)} → ${a99.toFixed(2)} ms (quiet → under attack) ${within ? "within" : "OVER"} the target`
  )
  return within
}

/**
 * The attackers, in a process of their own (so the measuring process's event loop is not theirs): they run until
 * their stdin closes, then print what their requests got (JSON) and exit.
 */
const attack = (port: number, sessionId: string) => {
  let stop = false
  const stopped = () => stop
  for (let i = 0; i < sizes.hung; i++) hung(port, stopped)
  const attackers: Array<Promise<void>> = []
  const callback = `/sessions/${sessionId}/turns/turn_x/callbacks/cb_x/answer`
  const piece = "x".repeat(64 * 1024)
  const oversized = ["{\"input\":\"", ...Array.from({ length: 48 }, () => piece), "\"}"]
  const deepBodies = [
    [callback, `{"_tag":"ClientToolResult","isFailure":true,"result":${nested(5_000)}}`],
    [`/sessions/${sessionId}/turns`, `{"input":${nested(5_000)}}`],
    ["/sessions", `{"name":"streamer","permissions":${nested(5_000)}}`]
  ] as const
  const garbage = [
    ["application/octet-stream", "\u0000\u0001garbage"],
    ["multipart/form-data; boundary=x", "--x\r\n\r\nnot json\r\n--x--"],
    ["application/json", "{\"input\":"],
    ["application/json", "{\"_tag\":\"AllowApproval\",\"remeber\":\"session\"}"]
  ] as const
  for (let i = 0; i < sizes.oversized; i++) {
    attackers.push(
      loop("oversized", stopped, () => post(port, `/sessions/${sessionId}/turns`, "application/json", oversized))
    )
  }
  for (let i = 0; i < sizes.deep; i++) {
    const [path, body] = deepBodies[i % deepBodies.length]
    attackers.push(loop("deep", stopped, () => post(port, path, "application/json", [body])))
  }
  for (let i = 0; i < sizes.garbage; i++) {
    const [type, body] = garbage[i % garbage.length]
    attackers.push(loop("garbage", stopped, () => post(port, callback, type, [body])))
  }
  process.stdout.write("ATTACKING\n")
  process.stdin.resume()
  process.stdin.on("end", () => {
    stop = true
    void Promise.all(attackers).then(() => {
      process.stdout.write(`OUTCOMES ${JSON.stringify(Object.fromEntries(outcomes))}\n`)
      process.exit(0)
    })
  })
}

/** Starts the attackers' process; gives it once it attacks. */
const startAttackers = (port: number, sessionId: string) =>
  Effect.callback<ChildProcess.ChildProcess, Error>((resume) => {
    const child = ChildProcess.spawn(
      process.execPath,
      [...process.execArgv, import.meta.filename, ...process.argv.slice(2), `--attack=${port},${sessionId}`],
      { stdio: ["pipe", "pipe", "inherit"] }
    )
    child.stdout.on("data", (chunk) => {
      if (String(chunk).includes("ATTACKING")) resume(Effect.succeed(child))
    })
    child.on("exit", (code) => resume(Effect.fail(new Error(`the attackers exited (${code})`))))
  })

/** Stops the attackers: what their requests got. */
const stopAttackers = (child: ChildProcess.ChildProcess) =>
  Effect.callback<Record<string, number>>((resume) => {
    let out = ""
    child.stdout?.on("data", (chunk) => {
      out += String(chunk)
      const match = /OUTCOMES (.+)\n/.exec(out)
      if (match !== null) resume(Effect.succeed(JSON.parse(match[1]) as Record<string, number>))
    })
    child.stdin?.end()
  })

const program = Effect.gen(function*() {
  const { child, url } = yield* startServer(10)
  const port = Number(new URL(url).port)
  const session = yield* Effect.promise(() => call(`${url}/sessions`, "POST", { name: "streamer", model: "bench" }))
  const sessionId = String(session?.sessionId)
  yield* Effect.promise(() => timeNormal(url, sessionId, 20)) // warm up
  const quiet = yield* Effect.promise(() => timeNormal(url, sessionId, sizes.samples))
  const rssBefore = rssOf(child.pid!)
  const attackers = yield* startAttackers(port, sessionId)
  yield* Effect.sleep("2 seconds") // the attack in full swing
  const attacked = yield* Effect.promise(() => timeNormal(url, sessionId, sizes.samples))
  const rssDuring = rssOf(child.pid!)
  const got = yield* stopAttackers(attackers)

  console.log(
    `hostile load: ${sizes.hung} hung connections, ${sizes.oversized} oversized chunked uploads, ` +
      `${sizes.deep} deep bodies, ${sizes.garbage} garbage bodies at once; ${sizes.samples} samples of each normal request`
  )
  const within = [
    row("GET /sessions/:id", quiet.get, attacked.get),
    row("a turn over plain HTTP (send, wait)", quiet.turn, attacked.turn)
  ].every(Boolean)
  const answered = Object.entries(got).sort(([a], [b]) => (a < b ? -1 : 1))
  console.log(`hostile requests answered: ${answered.map(([what, n]) => `${what} ×${n}`).join(", ")}`)
  const unanswered = answered.filter(([what]) => what.endsWith(": none")).reduce((sum, [, n]) => sum + n, 0)
  console.log(`unanswered hostile requests (reset or dropped without a status): ${unanswered}`)
  console.log(`server RSS: ${(rssBefore / 2 ** 20).toFixed(1)} → ${(rssDuring / 2 ** 20).toFixed(1)} MiB under attack`)
  if (!within || unanswered > 0) process.exitCode = 1
})

const attackArg = process.argv.find((a) => a.startsWith("--attack="))?.split("=")[1]?.split(",")
if (attackArg !== undefined) {
  attack(Number(attackArg[0]), attackArg[1])
} else {
  Effect.runPromise(Effect.scoped(program)).catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
