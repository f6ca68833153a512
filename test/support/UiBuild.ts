/**
 * Vitest global setup: builds the `svc` and `cli` bundles (`scripts/build.ts`: `dist/svc.js`,
 * `dist/cli.js`, which the tests start) and the browser bundles (`packages/server/ui/build.ts`)
 * before any test starts an svc, so every process a test starts runs the current sources. What did
 * not change is not rebuilt (a hash of the sources; about 0.1 s). Then, alongside the browser
 * bundles, the prepared embedded data directory of this build (test/support/EmbeddedTemplate.ts),
 * which the e2e tests copy instead of running PGlite's `initdb` on every start.
 */
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { embeddedTemplate } from "./EmbeddedTemplate.ts"
import { repoRoot } from "./SvcProcess.ts"

export default async function setup(): Promise<void> {
  // Imported by URL: the build scripts live outside this project's sources.
  const bundle = pathToFileURL(path.join(repoRoot, "scripts/build.ts")).href
  const { buildBundle } = (await import(bundle)) as { buildBundle: () => Promise<boolean> }
  await buildBundle()
  const ui = pathToFileURL(path.join(repoRoot, "packages/server/ui/build.ts")).href
  const { buildUi } = (await import(ui)) as { buildUi: () => Promise<ReadonlyArray<string>> }
  await Promise.all([buildUi(), embeddedTemplate()])
}
