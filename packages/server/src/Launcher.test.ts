/**
 * The launcher's choices (issue 30): the memory limit read from cgroup v2, v1 (the smallest along
 * the process's cgroup path) or the physical memory; the heap flags derived from it; and when a
 * `svc` process is started again with them (only `serve`, never twice, never over the operator's
 * own flags, `SVC_NODE_OPTIONS` replacing them).
 */
import { describe, expect, it } from "vitest"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { heapFlags, launchPlan, memoryLimit } from "./Launcher.ts"

const mib = 1024 * 1024
const gib = 1024 * mib

const tree = async (files: Record<string, string>) => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "svc-launcher-"))
  for (const [file, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(root, file)), { recursive: true })
    await fs.writeFile(path.join(root, file), text)
  }
  return root
}

describe("memoryLimit", () => {
  it("reads cgroup v2 memory.max, the smallest along the path, bounded by the physical memory", async () => {
    const root = await tree({
      "proc-self-cgroup": "0::/kubepods/pod1/ctr\n",
      "fs/kubepods/memory.max": String(2 * gib),
      "fs/kubepods/pod1/memory.max": String(512 * mib),
      "fs/kubepods/pod1/ctr/memory.max": "max\n"
    })
    try {
      const self = path.join(root, "proc-self-cgroup")
      expect(memoryLimit(path.join(root, "fs"), self, 8 * gib)).toEqual({ bytes: 512 * mib, source: "cgroup v2" })
      expect(memoryLimit(path.join(root, "fs"), self, 256 * mib)).toEqual({ bytes: 256 * mib, source: "physical" })
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("inside a container's cgroup namespace, reads the root memory.max", async () => {
    const root = await tree({ "proc-self-cgroup": "0::/\n", "fs/memory.max": String(768 * mib) })
    try {
      expect(memoryLimit(path.join(root, "fs"), path.join(root, "proc-self-cgroup"), 8 * gib)).toEqual({
        bytes: 768 * mib,
        source: "cgroup v2"
      })
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("falls back to cgroup v1 memory.limit_in_bytes, treating 2^63 as no limit", async () => {
    const root = await tree({
      "proc-self-cgroup": "9:name=systemd:/\n4:memory:/docker/abc\n0::/\n",
      "fs/memory/memory.limit_in_bytes": "9223372036854771712\n",
      "fs/memory/docker/abc/memory.limit_in_bytes": String(gib)
    })
    try {
      const self = path.join(root, "proc-self-cgroup")
      expect(memoryLimit(path.join(root, "fs"), self, 8 * gib)).toEqual({ bytes: gib, source: "cgroup v1" })
      await fs.writeFile(path.join(root, "fs/memory/docker/abc/memory.limit_in_bytes"), "9223372036854771712\n")
      expect(memoryLimit(path.join(root, "fs"), self, 8 * gib)).toEqual({ bytes: 8 * gib, source: "physical" })
    } finally {
      await fs.rm(root, { recursive: true, force: true })
    }
  })

  it("without /proc or cgroup files, is the physical memory", () => {
    expect(memoryLimit("/nonexistent-cgroup", "/nonexistent-proc", 3 * gib)).toEqual({
      bytes: 3 * gib,
      source: "physical"
    })
  })
})

describe("heapFlags", () => {
  it("gives the old generation a quarter of the limit within 192..320 MB, a smaller semi-space under 1 GiB", () => {
    expect(heapFlags(256 * mib)).toEqual(["--max-old-space-size=192", "--max-semi-space-size=8"])
    expect(heapFlags(768 * mib)).toEqual(["--max-old-space-size=192", "--max-semi-space-size=8"])
    expect(heapFlags(gib)).toEqual(["--max-old-space-size=256", "--max-semi-space-size=16"])
    expect(heapFlags(24 * gib)).toEqual(["--max-old-space-size=320", "--max-semi-space-size=16"])
  })
})

describe("launchPlan", () => {
  const argv = ["/usr/bin/node", "/app/main.ts", "serve", "--config", "svc.yaml"]
  const limit = () => ({ bytes: gib, source: "cgroup v2" as const })

  it("relaunches serve with the computed flags after Node's own arguments, marked as launched", () => {
    const plan = launchPlan({ argv, execArgv: ["--enable-source-maps"], env: { HOME: "/h" }, limit })
    expect(plan?.args).toEqual([
      "--enable-source-maps",
      "--max-old-space-size=256",
      "--max-semi-space-size=16",
      "--expose-gc-as=__svcRelayGc",
      "/app/main.ts",
      "serve",
      "--config",
      "svc.yaml"
    ])
    expect(plan?.env).toEqual({
      HOME: "/h",
      SVC_LAUNCHED: "--max-old-space-size=256 --max-semi-space-size=16 --expose-gc-as=__svcRelayGc"
    })
  })

  it("does nothing for other commands, once launched, or when the flags are already on Node's command line", () => {
    expect(launchPlan({ argv: [argv[0] ?? "", "/app/main.ts", "migrate"], execArgv: [], env: {}, limit })).toBe(
      undefined
    )
    expect(launchPlan({ argv: [argv[0] ?? "", "/app/main.ts", "--help"], execArgv: [], env: {}, limit })).toBe(
      undefined
    )
    expect(launchPlan({ argv, execArgv: [], env: { SVC_LAUNCHED: "x" }, limit })).toBe(undefined)
    expect(
      launchPlan({
        argv,
        execArgv: ["--max-old-space-size=256", "--max-semi-space-size=16", "--expose-gc-as=__svcRelayGc"],
        env: {},
        limit
      })
    ).toBe(undefined)
  })

  it("keeps an explicit --max-old-space-size from NODE_OPTIONS or the command line, adding only the other flag", () => {
    expect(launchPlan({ argv, execArgv: [], env: { NODE_OPTIONS: "--max-old-space-size=900" }, limit })?.flags).toEqual(
      ["--max-semi-space-size=16", "--expose-gc-as=__svcRelayGc"]
    )
    expect(launchPlan({ argv, execArgv: ["--max_semi_space_size=4"], env: {}, limit })?.flags).toEqual([
      "--max-old-space-size=256",
      "--expose-gc-as=__svcRelayGc"
    ])
  })

  it("takes SVC_NODE_OPTIONS instead of the computed flags; empty turns the launcher off", () => {
    expect(
      launchPlan({ argv, execArgv: [], env: { SVC_NODE_OPTIONS: " --max-old-space-size=700  --liftoff-only " }, limit })
        ?.flags
    ).toEqual(["--max-old-space-size=700", "--liftoff-only"])
    expect(launchPlan({ argv, execArgv: [], env: { SVC_NODE_OPTIONS: "" }, limit })).toBe(undefined)
    expect(
      launchPlan({
        argv,
        execArgv: [],
        env: { SVC_NODE_OPTIONS: "" },
        limit: () => {
          throw new Error("the limit is not read when SVC_NODE_OPTIONS is set")
        }
      })
    ).toBe(undefined)
  })
})
