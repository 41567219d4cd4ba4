/**
 * The root of the test run: the projects are those of `vitest.workspace.ts`. One setting applies to all of them:
 * how many test files run at once. Vitest's default is one fewer than the CPUs — a single file at a time on a 2-core
 * machine — but the slow files (the install test, the API reference, the process tests) mostly wait on child
 * processes (npm, tsc, docgen, other engines), so they run alongside the rest.
 */
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    maxWorkers: 4,
    minWorkers: 1
  }
})
