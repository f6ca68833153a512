import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { mayChooseWasmCompiler } from "./PgliteSettings.ts"

const here = path.dirname(fileURLToPath(import.meta.url))

describe("PgliteSettings", () => {
  it("keeps a WebAssembly compiler chosen on Node's command line", () => {
    assert.isTrue(mayChooseWasmCompiler([]))
    assert.isTrue(
      mayChooseWasmCompiler(["--max-old-space-size=320", "--max-semi-space-size=16", "--enable-source-maps"])
    )
    for (const flag of [
      "--no-liftoff-only",
      "--liftoff-only",
      "--liftoff",
      "--noliftoff",
      "--wasm-tier-up",
      "--no-wasm-dynamic-tiering",
      "--wasm_dynamic_tiering",
      "--wasm-tiering-budget=180000000"
    ]) {
      assert.isFalse(mayChooseWasmCompiler(["--max-old-space-size=320", flag]), flag)
    }
  })

  it("PGlite opened through the client (in its worker thread) never compiles PostgreSQL with TurboFan", () => {
    // V8 prints one line per compiled WebAssembly function, naming its module. Without the
    // flags, an initdb and 300 statements tier about 270 of PostgreSQL's functions up (the
    // parser among them); Node's own TypeScript stripper (a module of its own, compiled
    // before PGlite) may tier up either way.
    const child = spawnSync(
      process.execPath,
      ["--trace-wasm-compilation-times", path.join(here, "PgliteSettings.fixture.ts")],
      { cwd: here, encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }
    )
    assert.strictEqual(child.status, 0, child.stderr)
    assert.include(child.stdout, "statements: 300")
    const modules = new Map<string, { liftoff: number; turbofan: number }>()
    for (const match of child.stdout.matchAll(/^Compiled function (\S+)#\d+ using (Liftoff|TurboFan)/gm)) {
      const counts = modules.get(match[1]!) ?? { liftoff: 0, turbofan: 0 }
      if (match[2] === "Liftoff") counts.liftoff++
      else counts.turbofan++
      modules.set(match[1]!, counts)
    }
    // PostgreSQL's module is the one with the most functions compiled.
    const postgres = [...modules.values()].sort((a, b) => b.liftoff - a.liftoff)[0]
    assert.isAbove(postgres?.liftoff ?? 0, 1000)
    assert.strictEqual(postgres?.turbofan, 0)
  }, 150_000)
})
