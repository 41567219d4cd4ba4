/**
 * The root of the test run: one project per workspace that has tests (each with its own `vitest.config.ts`, merged
 * from `vitest.shared.ts`). One setting applies to all of them: how many test files run at once. Vitest's default is
 * one fewer than the CPUs — a single file at a time on a 2-core machine — but the slow files (the install test, the
 * API reference, the process tests) mostly wait on child processes (npm, tsc, docgen, other engines), so they run
 * alongside the rest.
 */
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "examples/vitest.config.ts", "e2e/vitest.config.ts"],
    maxWorkers: 4
  }
})
