// Writes the session app's bundle to dist/app/ (index.html, app.css, app.js): what a published @parley/server serves.
// The app is React on @parley/react (app/main.tsx), bundled with esbuild as the server bundles it in the repository.
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { URL } from "node:url"

const app = new URL("../app/", import.meta.url)
const out = new URL("../dist/app/", import.meta.url)
fs.mkdirSync(out, { recursive: true })
await esbuild.build({
  entryPoints: [new URL("main.tsx", app).pathname],
  bundle: true,
  outfile: new URL("app.js", out).pathname,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  conditions: ["@parley/source"],
  define: { "process.env.NODE_ENV": "\"production\"" },
  minify: true,
  legalComments: "none"
})
for (const file of ["index.html", "app.css"]) fs.copyFileSync(new URL(file, app), new URL(file, out))
