/**
 * The root of the test run: one project per workspace that has tests (each with its own `vitest.config.ts`, merged
 * from `vitest.shared.ts`, which says how many test files run at once: Vitest reads it per project).
 */
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "examples/vitest.config.ts", "e2e/vitest.config.ts"]
  }
})
