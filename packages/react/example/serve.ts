/**
 * `npm run example -w @parley/react`: the example app on http://127.0.0.1:5173, for a Parley server on PARLEY_URL
 * (default http://127.0.0.1:8787: `npm start` in another terminal). The page is bundled with esbuild when asked for;
 * every other request is forwarded to the Parley server as it is (so the page and the API share an origin), and a
 * server that cannot be reached drops the connection, as it would itself: the app's banner says so.
 *
 * Open the link with the key `npm start` printed: http://127.0.0.1:5173/#key=parley_…, and add `?session=ses_…` to
 * follow a session's transcript.
 */
import * as esbuild from "esbuild"
import * as http from "node:http"
import * as path from "node:path"

const target = new URL(process.env.PARLEY_URL ?? "http://127.0.0.1:8787")
const port = Number(process.env.PORT ?? 5173)

const page = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Parley: the example app</title>" +
  "</head><body><div id=\"root\"></div><script type=\"module\" src=\"/main.js\"></script></body></html>"

const bundle = async () => {
  const result = await esbuild.build({
    entryPoints: [path.join(import.meta.dirname, "main.tsx")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    conditions: ["@parley/source"],
    jsx: "automatic",
    define: { "process.env.NODE_ENV": "\"development\"" }
  })
  return result.outputFiles[0].text
}

http.createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://localhost")
  if (url.pathname === "/") return response.writeHead(200, { "content-type": "text/html" }).end(page)
  if (url.pathname === "/main.js") {
    return void bundle().then(
      (js) => response.writeHead(200, { "content-type": "text/javascript" }).end(js),
      (error) => response.writeHead(500).end(String(error))
    )
  }
  const upstream = http.request({
    host: target.hostname,
    port: target.port,
    path: request.url,
    method: request.method,
    headers: { ...request.headers, host: target.host }
  }, (answer) => {
    response.writeHead(answer.statusCode ?? 502, answer.headers)
    answer.pipe(response)
  })
  upstream.on("error", () => response.socket?.destroy())
  request.pipe(upstream)
}).listen(port, "127.0.0.1", () => {
  console.log(`the example app: http://127.0.0.1:${port}/#key=<the key npm start printed> (API: ${target.origin})`)
})
