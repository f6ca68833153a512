/**
 * What makes a later start fast (docs/testing.md "Start-up time"): a ready copy of the template is
 * renamed into a new run directory (not copied); after a start the kit prepares the next start's
 * run directory, its database opening, and the next start of the process takes it and holds the
 * same data as a fresh copy; run directories of processes that no longer run are removed; the
 * signing key is the process's one, written for svc before it starts.
 */
import { assert, describe, it } from "vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { copyTemplate } from "./DatabaseTemplate.ts"
import { prepareSigningKey } from "./KitSecrets.ts"
import { SvcTest } from "./SvcTest.ts"

/** The pid of a process that ran and ended. */
const endedPid = () => Number(execFileSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]))

describe("the kit's prepared databases", () => {
  it("renames a ready copy into a run directory whose parents do not exist yet", async () => {
    const cacheDir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-warm-test-"))
    try {
      const template = path.join(cacheDir, "pglite-0123456789abcdef")
      await fs.mkdir(template)
      await fs.writeFile(path.join(template, "PG_VERSION"), "17\n")
      const spare = `${template}.spare-1-abc`
      await fs.mkdir(spare)
      await fs.writeFile(path.join(spare, "PG_VERSION"), "spare\n")
      const target = path.join(cacheDir, "run-1-x", ".svc", "db")
      await copyTemplate(template, target)
      assert.strictEqual(await fs.readFile(path.join(target, "PG_VERSION"), "utf8"), "spare\n")
      assert.notInclude(await fs.readdir(cacheDir), path.basename(spare))
    } finally {
      await fs.rm(cacheDir, { recursive: true, force: true })
    }
  })

  it("hands the next start of the process the run directory prepared after the last one", async () => {
    const cacheDir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-warm-test-"))
    const abandoned = path.join(cacheDir, `run-${endedPid()}-gone`)
    await fs.mkdir(path.join(abandoned, ".svc"), { recursive: true })
    try {
      const fixture = { namespaces: [{ path: "root.warm" }] }
      const first = await SvcTest.start({ cacheDir, fixture })
      const firstRun = path.dirname(first.dataDir)
      // The kit writes the process's key pair for svc, which signs the admin token with it.
      const pems = await prepareSigningKey()
      assert.strictEqual(
        await fs.readFile(path.join(first.dataDir, "dev-keys", "jwt-public.pem"), "utf8"),
        pems?.public ?? "no key pair"
      )
      const runDirs = async () =>
        (await fs.readdir(cacheDir)).filter((name) => name.startsWith(`run-${process.pid}-`)).sort()
      let prepared: Array<string> = []
      for (let waited = 0; waited < 60_000 && prepared.length === 0; waited += 100) {
        prepared = (await runDirs()).filter((name) => path.join(cacheDir, name) !== firstRun)
        if (prepared.length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.lengthOf(prepared, 1, "a run directory prepared for the next start")
      await first.stop()
      assert.notInclude(await fs.readdir(cacheDir), path.basename(firstRun), "a stopped start's directory is removed")
      // Removed in the background once the next run directory is prepared.
      const gone = async () => !(await fs.readdir(cacheDir)).includes(path.basename(abandoned))
      for (let waited = 0; waited < 30_000 && !(await gone()); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.isTrue(await gone(), "an ended process's directory is removed")

      const second = await SvcTest.start({ cacheDir, fixture })
      try {
        assert.strictEqual(second.dataDir, path.join(cacheDir, prepared[0] ?? "", ".svc"))
        // A fresh database: the fixture's namespace is created again (svc refuses an existing one).
        assert.deepStrictEqual(
          second.seeded.namespaces.map((namespace) => namespace.path),
          ["root.warm"]
        )
      } finally {
        await second.stop()
      }
    } finally {
      // The kit's background copies of the template finish first.
      const copying = async () => (await fs.readdir(cacheDir)).some((name) => name.includes(".copying-"))
      for (let waited = 0; waited < 30_000 && (await copying()); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      await fs.rm(cacheDir, { recursive: true, force: true, maxRetries: 5 })
    }
  }, 180_000)
})
