import { configDefaults, defineConfig } from "vitest/config"

/**
 * Package tests that start a process of their own (`bin/cli`, a cluster fixture, redis-server
 * nodes of a Redis Cluster or with TLS, the build script): they run with the process tests, not in
 * the fast tier.
 */
const spawning = [
  "packages/cli/src/main.test.ts",
  "packages/cli/src/commands/LoginRedirect.test.ts",
  "packages/cluster/src/WorkflowResume.test.ts",
  "packages/server/src/stores/CounterStore.test.ts",
  "packages/server/src/stores/CounterStoreTls.test.ts",
  "packages/server/src/stores/RateLimitStore.test.ts",
  "test/Build.test.ts"
]

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ["default", "./test/support/SummaryReporter.ts"],
    // `expect.poll` waits on a condition up to 10 s (vitest's own default is 1 s): a browser test
    // waiting for svc's answer on a loaded 2-core machine is slow, not wrong.
    expect: { poll: { timeout: 10_000 } },
    // Two tiers; `vitest run` (npm test) runs both, `npm run test:unit` the fast one alone.
    projects: [
      {
        extends: true,
        test: {
          // In-process tests of the packages and the repository checks: no process is started,
          // no bundle is needed (PostgreSQL and Redis on 127.0.0.1 are).
          name: "unit",
          include: ["packages/*/src/**/*.test.ts", "packages/server/ui/**/*.test.ts", "test/*.test.ts"],
          exclude: [...configDefaults.exclude, ...spawning],
          // A worker evaluates the module graph (effect, the packages) once for all its files
          // instead of once per file: import was about 70% of this tier's time. `--isolate` on
          // the command line gives every file its own again.
          isolate: false
        }
      },
      {
        extends: true,
        test: {
          // Tests that start processes: svc and cli as built bundles, chromium, kubectl, pgbouncer…
          name: "process",
          include: ["test/*/**/*.test.ts", ...spawning],
          // Builds the `svc` and `cli` bundles and the Connect UI and admin UI bundles (unchanged
          // sources: nothing to do), then the prepared embedded data directory of this build.
          globalSetup: ["./test/support/UiBuild.ts"]
        }
      }
    ]
  }
})
