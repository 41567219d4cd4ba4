export default ["packages/*/vitest.config.ts", "examples/vitest.config.ts", "e2e/vitest.config.ts"]
