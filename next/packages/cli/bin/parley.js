#!/usr/bin/env node
// The `parley` command. Installed from the package, it runs the build (`dist/`). In the repository, where the sources
// are next to it, it runs them: tsx compiles them, and packages resolve to their sources (the `@parley/source` export
// condition, as in the tests), so `npx parley` needs no build.
import { existsSync } from "node:fs"
import { register } from "node:module"
import { URL } from "node:url"

const source = new URL("../src/bin.ts", import.meta.url)
if (existsSync(source)) {
  const conditions = "export async function resolve(specifier, context, next) {" +
    " return next(specifier, { ...context, conditions: [...context.conditions, \"@parley/source\"] }) }"
  register(`data:text/javascript,${encodeURIComponent(conditions)}`)
  const { register: registerTsx } = await import("tsx/esm/api")
  registerTsx()
  await import(source.href)
} else {
  await import("../dist/bin.js")
}
