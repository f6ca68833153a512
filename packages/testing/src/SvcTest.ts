/**
 * `@svc/testing/SvcTest`: an in-process svc for a host application's own tests (docs/testing.md),
 * defined in `SvcTestKit.ts`. This entry first runs `OpenOnImport.ts` (node's modules only), which
 * starts opening the first start's database in PGlite's thread, and only then imports the kit (the
 * server, Effect, PGlite: most of the import's time), so the two overlap (docs/testing.md
 * "Start-up time").
 */
import "./OpenOnImport.ts"

const kit = await import("./SvcTestKit.ts")

/** The in-process svc of a test: `SvcTest.layer(options)`, `SvcTest.start(options)`, `SvcTest.adminClient` (`SvcTestKit.ts`). */
export const SvcTest: typeof kit.SvcTest = kit.SvcTest
/** The service `SvcTest.layer` provides: the test's `SvcTestInfo`. */
export type SvcTest = import("./SvcTestKit.ts").SvcTest
export type { SvcTestHandle, SvcTestInfo, SvcTestOptions } from "./SvcTestKit.ts"
