/**
 * The heap limits of a `svc serve` process, chosen by svc itself (issue 30). Node sizes V8's heap
 * from the machine, not from what svc needs: on a large host the young generation alone may grow
 * to 192 MB and the old generation to several GB of garbage before a major collection, so the
 * resident set climbed 150 MB over 100,000 proxied requests (docs/performance.md "Memory"). The
 * limits can only be given when the process starts (`v8.setFlagsFromString` does not change a
 * running heap's limit), so `main.ts` asks {@link launchPlan} first, before it loads anything
 * else, and when the plan says so it replaces the process with `process.execve`: the same PID,
 * stdio and signals, Node started again with the flags below. No parent process stays behind,
 * so nothing can be orphaned, and SIGTERM reaches svc itself.
 *
 * The limits come from the memory svc may use: the cgroup's limit (v2 `memory.max`, else v1
 * `memory.limit_in_bytes`, the smallest along the process's cgroup path), else the physical
 * memory. The old generation gets a quarter of it, at least {@link minOldSpaceMb} and at most
 * {@link maxOldSpaceMb}; each semi-space of the young generation {@link semiSpaceMb}, halved
 * under 1 GiB. Overrides, documented in docs/configuration.md ("Memory and the launcher"):
 * `SVC_NODE_OPTIONS` replaces the computed flags (empty: none, no relaunch); an explicit
 * `--max-old-space-size` or `--max-semi-space-size` in `NODE_OPTIONS` or on Node's command line
 * wins over the computed one.
 *
 * One more flag rides along: {@link relayGcFlag} exposes V8's `gc` under a private name, so the
 * streaming relay can ask for a minor collection of its dead chunks (`outbound/RelayedChunks.ts`)
 * without changing V8's flags at run time. `SVC_NODE_OPTIONS` replaces it too.
 *
 * Imports Node built-ins and that flag's one-constant module only: it runs before the rest of
 * svc is loaded.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { relayGcFlag } from "./outbound/RelayedChunks.ts"

/** The old generation's bounds, in MB. */
export const minOldSpaceMb = 192
export const maxOldSpaceMb = 320
/** A semi-space of the young generation, in MB (half of it under 1 GiB of memory). */
export const semiSpaceMb = 16

/** Set in the relaunched process, so it never relaunches again. */
export const launchedEnv = "SVC_LAUNCHED"
/** Node options that replace the computed heap flags. */
export const optionsEnv = "SVC_NODE_OPTIONS"

const mib = 1024 * 1024

/** The memory svc may use and where that figure came from. */
export interface MemoryLimit {
  readonly bytes: number
  readonly source: "cgroup v2" | "cgroup v1" | "physical"
}

/** A number of bytes from a cgroup file; undefined for "max", a v1 "unlimited" or anything unreadable. */
const readLimit = (file: string): number | undefined => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8").trim()
  } catch {
    return undefined
  }
  if (!/^\d+$/.test(text)) return undefined
  const bytes = Number(text)
  // cgroup v1 writes a page-rounded 2^63 for "no limit".
  return bytes > 0 && bytes < 2 ** 60 ? bytes : undefined
}

/** The smallest limit in `file` of the cgroup `relative` (under `root`) and its ancestors. */
const smallestAlong = (root: string, relative: string, file: string): number | undefined => {
  let smallest: number | undefined
  let dir = path.posix.normalize(`/${relative}`)
  for (;;) {
    const limit = readLimit(path.join(root, dir, file))
    if (limit !== undefined && (smallest === undefined || limit < smallest)) smallest = limit
    if (dir === "/") return smallest
    dir = path.posix.dirname(dir)
  }
}

/**
 * The memory limit of this process: its cgroup's (v2, then v1), bounded by the physical memory.
 * `root` and `procSelfCgroup` are parameters for tests.
 */
export const memoryLimit = (
  root = "/sys/fs/cgroup",
  procSelfCgroup = "/proc/self/cgroup",
  physical = os.totalmem()
): MemoryLimit => {
  let lines: ReadonlyArray<string> = []
  try {
    lines = fs.readFileSync(procSelfCgroup, "utf8").split("\n")
  } catch {
    // Not Linux, or no /proc: the physical memory.
  }
  const v2 = lines.find((line) => line.startsWith("0::"))
  const v2Limit = smallestAlong(root, v2 === undefined ? "/" : v2.slice(3), "memory.max")
  if (v2Limit !== undefined && v2Limit < physical) return { bytes: v2Limit, source: "cgroup v2" }
  const v1 = lines.map((line) => line.split(":")).find((parts) => parts[1]?.split(",").includes("memory") === true)
  const v1Limit = smallestAlong(path.join(root, "memory"), v1?.[2] ?? "/", "memory.limit_in_bytes")
  if (v1Limit !== undefined && v1Limit < physical) return { bytes: v1Limit, source: "cgroup v1" }
  return { bytes: physical, source: "physical" }
}

/** The computed heap flags for a memory limit. */
export const heapFlags = (limitBytes: number): ReadonlyArray<string> => {
  const quarter = Math.floor(limitBytes / mib / 4)
  const oldSpace = Math.min(maxOldSpaceMb, Math.max(minOldSpaceMb, quarter))
  const semiSpace = limitBytes < 1024 * mib ? semiSpaceMb / 2 : semiSpaceMb
  return [`--max-old-space-size=${oldSpace}`, `--max-semi-space-size=${semiSpace}`]
}

const flagName = (flag: string) => flag.split("=")[0]?.replace(/_/g, "-") ?? flag

/** What the relaunched process runs: Node's arguments after the executable, and its environment. */
export interface LaunchPlan {
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string | undefined>>
  readonly flags: ReadonlyArray<string>
}

/**
 * Whether and how to start svc again with heap flags: only for `serve` (a short command is done
 * before its heap matters), never twice, never when every flag is already given. `argv` and
 * `execArgv` as in `process`; `limit` is read only when needed.
 */
export const launchPlan = (options: {
  readonly argv: ReadonlyArray<string>
  readonly execArgv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string | undefined>>
  readonly limit?: () => MemoryLimit
}): LaunchPlan | undefined => {
  const { argv, execArgv, env } = options
  if (env[launchedEnv] !== undefined) return undefined
  const command = argv.slice(2).find((arg) => !arg.startsWith("-"))
  if (command !== "serve") return undefined
  const override = env[optionsEnv]
  const given = new Set([...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/)].filter((f) => f !== "").map(flagName))
  const wanted =
    override !== undefined
      ? override.split(/\s+/).filter((flag) => flag !== "")
      : [...heapFlags((options.limit ?? (() => memoryLimit()))().bytes), relayGcFlag].filter(
          (flag) => !given.has(flagName(flag))
        )
  const flags = wanted.filter((flag) => !execArgv.includes(flag))
  if (flags.length === 0) return undefined
  return {
    args: [...execArgv, ...flags, ...argv.slice(1)],
    env: { ...env, [launchedEnv]: flags.join(" ") },
    flags
  }
}
