/**
 * The session app's assets, served at `/` (`index.html`) and `/app/` (`app.js`, `app.css`). The app is React on
 * `@parley/react` (`app/main.tsx`). In the repository its sources (`app/`) are bundled with esbuild on first use (so
 * `npm start` and the tests always serve the current app); a published package serves the bundle its build wrote to
 * `dist/app/` (`scripts/buildApp.mjs`, with the same options: `bundleOptions`). No CDN: the page works offline.
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

/**
 * How the app is bundled (here and by `scripts/buildApp.mjs`): one minified ES module for the browser, React in
 * production mode, the workspace's packages from their sources (the `@parley/source` condition).
 */
export const bundleOptions = (dir: string) => ({
  entryPoints: [`${dir}/main.tsx`],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  conditions: ["@parley/source"],
  define: { "process.env.NODE_ENV": "\"production\"" },
  minify: true,
  legalComments: "none",
  logLevel: "silent"
})

/** Bundles `app/main.tsx` (and what it imports: React, `@parley/react`) into one minified ES module. */
export const bundle = async (dir: string): Promise<string> => {
  const esbuild = (await import("esbuild")) as unknown as Esbuild
  const result = await esbuild.build({ ...bundleOptions(dir), write: false })
  return result.outputFiles[0].text
}

const load = Effect.promise(async (): Promise<Assets> => {
  if (fs.existsSync(`${sources}main.tsx`)) {
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
