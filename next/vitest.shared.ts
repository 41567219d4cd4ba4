import * as path from "node:path"
import { defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/** Tests run against the packages' sources (`src/*.ts`), never their build: see `exports` in each package.json. */
const conditions = ["@parley/source", ...defaultServerConditions]

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    setupFiles: [path.join(import.meta.dirname, "vitest.setup.ts")],
    include: ["test/**/*.test.ts"],
    sequence: { concurrent: true },
    testTimeout: 30_000
  }
})
