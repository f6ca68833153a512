/**
 * Vitest global setup: builds the browser bundles (`packages/server/ui/build.ts`) before any test
 * starts an svc, so the Connect UI and admin UI are served from the current sources. A bundle
 * whose sources did not change is not rebuilt.
 */
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { repoRoot } from "./SvcProcess.ts"

export default async function setup(): Promise<void> {
  // Imported by URL: the build script lives outside this project's sources.
  const script = pathToFileURL(path.join(repoRoot, "packages/server/ui/build.ts")).href
  const { buildUi } = (await import(script)) as { buildUi: () => Promise<ReadonlyArray<string>> }
  await buildUi()
}
