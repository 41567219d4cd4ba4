import * as path from "node:path"
import { defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/**
 * Tests run against the packages' sources (`src/*.ts`), never their build: see `exports` in each package.json.
 * Vitest 5 hands these conditions to Node as `--conditions` for the packages it does not transform; under `module`,
 * Node would pick the `module` builds of packages such as OpenTelemetry's, whose imports have no file extensions and
 * do not load in Node, so it is left out.
 */
const conditions = ["@parley/source", ...defaultServerConditions.filter((condition) => condition !== "module")]

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    setupFiles: [path.join(import.meta.dirname, "vitest.setup.ts")],
    include: ["test/**/*.test.ts"],
    sequence: { concurrent: true },
    // Two test files at once, one per core of this project's machine. Vitest's default is one fewer than the CPUs — a
    // single file at a time on 2 cores, which leaves them idle while the slow files (the install test, the API
    // reference, the process tests) wait on child processes — but the suite is mostly CPU (~22 min of it on 2 cores):
    // four at once ran it in 12.5–13 min instead of 15 at a load of 9–12, where tests with child processes and three
    // cluster runners ran past their timeouts. Vitest 5 reads this per project (every project the same: their files
    // share the workers); at the root it is not read.
    maxWorkers: 2,
    testTimeout: 30_000
  }
})
