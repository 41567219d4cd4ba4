/**
 * Where the time of a request goes: each route of the approval loop timed alone against a bench server (a probe for
 * `main.ts`'s rows). `node --conditions=@parley/source --import tsx bench/src/http/latency.ts <url>`
 */
const url = process.argv[2] ?? "http://127.0.0.1:8787"
const key = "bench-key-0123456789"
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }

const time = async (name: string, f: () => Promise<unknown>, n = 50) => {
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    await f()
    samples.push(performance.now() - started)
  }
  samples.sort((a, b) => a - b)
  console.log(`${name}: p50 ${samples[Math.floor(n / 2)].toFixed(2)} ms`)
}

const spec = { name: "streamer", model: "bench" }
const created = await (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify(spec) }))
  .json() as { sessionId: string }
await time("GET /openapi.json (no auth, no handler)", async () => (await fetch(`${url}/openapi.json`)).arrayBuffer())
await time("GET /sessions", async () => (await fetch(`${url}/sessions`, { headers })).arrayBuffer())
await time(
  "POST /sessions",
  async () => (await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify(spec) })).arrayBuffer()
)
await time(
  "GET /sessions/:id",
  async () => (await fetch(`${url}/sessions/${created.sessionId}`, { headers })).arrayBuffer()
)
await time("SSE first byte (live=false)", async () => {
  const response = await fetch(`${url}/sessions/${created.sessionId}/events?live=false`, { headers })
  await response.arrayBuffer()
})
await time("SSE first byte (live)", async () => {
  const controller = new AbortController()
  const response = await fetch(`${url}/sessions/${created.sessionId}/events`, { headers, signal: controller.signal })
  const reader = response.body!.getReader()
  await reader.read()
  controller.abort()
}, 20)
