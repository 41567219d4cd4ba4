// Writes the session app's bundle to dist/app/ (index.html, app.css, app.js): what a published @parley/server serves.
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { URL } from "node:url"

const app = new URL("../app/", import.meta.url)
const out = new URL("../dist/app/", import.meta.url)
fs.mkdirSync(out, { recursive: true })
await esbuild.build({
  entryPoints: [new URL("main.ts", app).pathname],
  bundle: true,
  outfile: new URL("app.js", out).pathname,
  format: "esm",
  target: "es2020",
  minify: true,
  legalComments: "none"
})
for (const file of ["index.html", "app.css"]) fs.copyFileSync(new URL(file, app), new URL(file, out))
