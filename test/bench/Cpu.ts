/**
 * CPU pinning for the measured rows: with `taskset` (util-linux) and at least two CPUs in the
 * bench's affinity list, the load generator (and the upstream behind the proxies) runs on the first
 * CPU and the servers under test on the others, so that on a 2-core machine neither starves the
 * other. Without `taskset` or with one CPU, nothing is pinned and the plan says so.
 */
import { execFileSync } from "node:child_process"

/** CPU lists in `taskset -c` syntax. */
export interface CpuPlan {
  /** The load generator, the in-process clients and the proxies' shared upstream. */
  readonly generator: string
  /** Each server under test. */
  readonly servers: string
  /** The bench's own affinity at start, restored after an in-process measurement. */
  readonly all: string
}

export type CpuRole = "generator" | "servers"

const affinityList = (pid: number): string | undefined => {
  try {
    const out = execFileSync("taskset", ["-c", "-p", String(pid)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    })
    return /list:\s*(\S+)/.exec(out)?.[1]
  } catch {
    return undefined
  }
}

/** `0-2,5` → [0, 1, 2, 5]. */
const expand = (list: string): Array<number> =>
  list.split(",").flatMap((part) => {
    const [from, to] = part.split("-").map(Number)
    if (from === undefined || !Number.isInteger(from)) return []
    const last = to === undefined || !Number.isInteger(to) ? from : to
    return Array.from({ length: Math.max(0, last - from + 1) }, (_, i) => from + i)
  })

let plan: CpuPlan | null | undefined
let reason = ""

/** The pinning plan, computed once; `undefined` when nothing is pinned (see `pinningNote`). */
export const cpuPlan = (): CpuPlan | undefined => {
  if (plan !== undefined) return plan ?? undefined
  const all = affinityList(process.pid)
  const cpus = all === undefined ? [] : expand(all)
  if (all === undefined) reason = "taskset not available"
  else if (cpus.length < 2) reason = `only ${cpus.length} cpu in the affinity list`
  const [first, ...rest] = cpus
  plan =
    all === undefined || first === undefined || rest.length === 0
      ? null
      : {
          generator: String(first),
          servers: rest.join(","),
          all
        }
  return plan ?? undefined
}

/** One line for the report: what runs where. */
export const pinningNote = (): string => {
  const p = cpuPlan()
  if (p === undefined) return `not pinned (${reason})`
  return `taskset: load generator, in-process clients and the proxies' upstream on cpu ${p.generator}; each server under test on cpu ${p.servers}`
}

/**
 * Pins every thread of `pid` to the role's CPUs; a no-op without a plan. `taskset -a` fails when a
 * thread it listed exits before it is pinned (Node starts and ends helper threads while it boots),
 * so it is tried up to 5 times, 20 ms apart; then it throws.
 */
export const pin = (pid: number | undefined, role: CpuRole): void => {
  const p = cpuPlan()
  if (p === undefined || pid === undefined) return
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync("taskset", ["-a", "-p", "-c", role === "generator" ? p.generator : p.servers, String(pid)], {
        stdio: "ignore"
      })
      return
    } catch (error) {
      if (attempt >= 5) throw error
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20)
    }
  }
}

/** `["taskset", "-c", cpus]` to prefix a command spawned for `role`, or `[]` without a plan. */
export const tasksetPrefix = (role: CpuRole): ReadonlyArray<string> => {
  const p = cpuPlan()
  return p === undefined ? [] : ["taskset", "-c", role === "generator" ? p.generator : p.servers]
}

/**
 * Runs an in-process client (the bench process itself) pinned to the generator CPU, then restores
 * the bench's own affinity (children started later must not inherit the pin).
 */
export const onGeneratorCpu = async <A>(measure: () => Promise<A>): Promise<A> => {
  const p = cpuPlan()
  if (p === undefined) return measure()
  pin(process.pid, "generator")
  try {
    return await measure()
  } finally {
    execFileSync("taskset", ["-a", "-p", "-c", p.all, String(process.pid)], { stdio: "ignore" })
  }
}
