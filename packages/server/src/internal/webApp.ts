/**
 * The session app's assets, served at `/` (`index.html`) and `/app/` (`app.js`, `app.css`). In the repository the
 * app's sources (`app/`) are bundled with esbuild when the server starts (so `npm start` and the tests always serve
 * the current app); a published package serves the bundle its build wrote to `dist/app/` (`scripts/buildApp.mjs`).
 * No CDN: the page works offline.
 */
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

export interface Assets {
  readonly html: string
  readonly js: string
  readonly css: string
}

const sources = fileURLToPath(new URL("../../app/", import.meta.url))
const built = fileURLToPath(new URL("../app/", import.meta.url))

interface Esbuild {
  readonly build: (options: object) => Promise<{ readonly outputFiles: ReadonlyArray<{ readonly text: string }> }>
}

/** Bundles `app/main.ts` (and what it imports) into one minified ES module. */
export const bundle = async (dir: string): Promise<string> => {
  const esbuild = (await import("esbuild")) as unknown as Esbuild
  const result = await esbuild.build({
    entryPoints: [`${dir}/main.ts`],
    bundle: true,
    write: false,
    format: "esm",
    target: "es2020",
    minify: true,
    legalComments: "none"
  })
  return result.outputFiles[0].text
}

const load = Effect.promise(async (): Promise<Assets> => {
  if (fs.existsSync(`${sources}main.ts`)) {
    return {
      html: fs.readFileSync(`${sources}index.html`, "utf8"),
      css: fs.readFileSync(`${sources}app.css`, "utf8"),
      js: await bundle(sources)
    }
  }
  return {
    html: fs.readFileSync(`${built}index.html`, "utf8"),
    css: fs.readFileSync(`${built}app.css`, "utf8"),
    js: fs.readFileSync(`${built}app.js`, "utf8")
  }
})

/** The assets, loaded (bundled) once, on first use. */
export const assets: Effect.Effect<Effect.Effect<Assets>> = Effect.cached(load)

const headers = { "cache-control": "no-cache", "x-content-type-options": "nosniff" }

export const responses = (loaded: Effect.Effect<Assets>) => ({
  html: Effect.map(
    loaded,
    (assets) => HttpServerResponse.html(assets.html).pipe(HttpServerResponse.setHeaders(headers))
  ),
  js: Effect.map(
    loaded,
    (assets) => HttpServerResponse.text(assets.js, { contentType: "text/javascript; charset=utf-8", headers })
  ),
  css: Effect.map(
    loaded,
    (assets) => HttpServerResponse.text(assets.css, { contentType: "text/css; charset=utf-8", headers })
  )
})
