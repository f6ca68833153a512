import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/src/**/*.test.ts", "packages/server/ui/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ["default", "./test/support/SummaryReporter.ts"],
    // Builds the Connect UI and admin UI bundles (unchanged sources: nothing to do).
    globalSetup: ["./test/support/UiBuild.ts"]
  }
})
