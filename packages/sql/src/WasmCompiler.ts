/**
 * The WebAssembly compiler PGlite runs under: V8's baseline compiler (Liftoff) only, the reasons
 * in `PgliteSettings.ts`. Apart from PGlite's module so that a thread can be started without
 * loading PGlite on the calling thread (`PgliteOpen.ts`).
 */
import * as v8 from "node:v8"

/** V8 flags that keep every WebAssembly module compiled after them on Liftoff, never tiered up. */
export const baselineWasmFlags: ReadonlyArray<string> = [
  "--liftoff-only",
  "--no-wasm-tier-up",
  "--no-wasm-dynamic-tiering"
]

/** A V8 flag on Node's command line that chooses WebAssembly's compilers itself. */
const wasmCompilerFlag = /^--(no-?)?(liftoff|wasm[-_]tier|wasm[-_]dynamic[-_]tiering)/

/** Whether svc may choose the WebAssembly compiler: no flag of `execArgv` chose it already. */
export const mayChooseWasmCompiler = (execArgv: ReadonlyArray<string>): boolean =>
  !execArgv.some((flag) => wasmCompilerFlag.test(flag))

let chosen: boolean | undefined

/**
 * Puts this process's WebAssembly on the baseline compiler before PGlite compiles its module
 * (V8 reads these flags when a module is compiled; a module compiled before is unchanged), once
 * per process. Nothing changes when Node's command line already names a WebAssembly compiler
 * flag (`--liftoff`, `--no-liftoff-only`, `--wasm-tier-up`, …: V8 flags cannot be given in
 * `NODE_OPTIONS`; `SVC_NODE_OPTIONS` puts them on `svc serve`'s command line): that choice is
 * kept. Every WebAssembly module the process compiles afterwards runs on Liftoff too (QuickJS of
 * the hook sandbox in the embedded default). Answers whether the flags were set.
 */
export const useBaselineWasmCompiler = (execArgv: ReadonlyArray<string> = process.execArgv): boolean => {
  if (chosen === undefined) {
    chosen = mayChooseWasmCompiler(execArgv)
    if (chosen) v8.setFlagsFromString(baselineWasmFlags.join(" "))
  }
  return chosen
}
