/**
 * Every child process and temp dir the bench starts is registered here, so that a normal end, an
 * error, Ctrl-C, SIGTERM or the hard time cap all kill the children and remove the dirs.
 */
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"

const children = new Set<ChildProcess>()
const dirs = new Set<string>()

export const trackChild = (child: ChildProcess): void => {
  children.add(child)
  child.once("exit", () => children.delete(child))
}

export const trackDir = (dir: string): void => {
  dirs.add(dir)
}

/** Synchronous, so it also works from `process.on("exit")`: SIGKILL every live child, rm every dir. */
export const killAll = (): void => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }
  children.clear()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
  dirs.clear()
}

/** Installs the exit/signal handlers and a hard cap on the whole run; returns a disarm function. */
export const installCleanup = (hardCapMs: number): (() => void) => {
  const abort = (reason: string, code: number) => {
    process.stderr.write(`\nbench: ${reason}; killing ${children.size} child process(es)\n`)
    killAll()
    process.exit(code)
  }
  const onSigint = () => abort("interrupted (SIGINT)", 130)
  const onSigterm = () => abort("terminated (SIGTERM)", 143)
  process.on("exit", killAll)
  process.on("SIGINT", onSigint)
  process.on("SIGTERM", onSigterm)
  const cap = setTimeout(() => abort(`hard cap of ${Math.round(hardCapMs / 1000)} s reached`, 124), hardCapMs)
  return () => {
    clearTimeout(cap)
    process.off("SIGINT", onSigint)
    process.off("SIGTERM", onSigterm)
  }
}
