/**
 * A prepared embedded-default data directory for tests: the `.svc` a first `svc serve` leaves in an
 * empty working directory (the PGlite database after `initdb` and every migration, the development
 * JWT key pair, the admin-api TLS certificate, the encryption root key), made once per build of
 * `dist/svc.js` and copied into each test's working directory. A start on such a copy is a restart
 * (about 1.5–2.5 s on a 2-core machine) instead of a first start (about 10 s: PGlite's `initdb`
 * alone takes most of it).
 *
 * The first start itself stays tested: tests that start `svc` in an empty directory
 * (`startSvc`/`runSvc` directly, or `launch(…, { fresh: true })`) never see the template.
 *
 * The template lives under `node_modules/.cache/svc-test/`, named by `dist/.build-hash` (a hash of
 * every source file, the lockfile and the Node version: a changed migration, PGlite version or
 * start-up code makes a new one). It is made by the test run's global setup (test/support/UiBuild.ts)
 * and, failing that, by the first test that needs it; templates of other builds made more than an
 * hour before are removed then.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { promisify } from "node:util"
import { freePorts, portEnv, repoRoot, startSvc, tempDir, waitForHttp } from "./SvcProcess.ts"

const exec = promisify(execFile)

const cacheRoot = path.join(repoRoot, "node_modules/.cache/svc-test")
const readyMarker = ".svc-template-ready"

const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false
  )

/** The directory of the template for the current build (`dist/.build-hash`). */
const templatePath = async (): Promise<string> => {
  const hash = (await fs.readFile(path.join(repoRoot, "dist/.build-hash"), "utf8")).trim()
  return path.join(cacheRoot, `embedded-${hash.slice(0, 16)}`)
}

/** Runs `svc serve` once in an empty directory until it is ready, stops it, and returns its `.svc`. */
const makeOnce = async (): Promise<string> => {
  const dir = await tempDir("svc-template-")
  const ports = await freePorts()
  const running = startSvc(["serve"], { cwd: dir, env: portEnv(ports) })
  let failure: unknown
  try {
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 80_000)
    // The admin token is the last thing a start writes (after the banner's listeners).
    const token = path.join(dir, ".svc/admin.token")
    for (let waited = 0; !(await exists(token)) && waited < 20_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } catch (error) {
    failure = error
  }
  const code = await running.stop()
  if (failure !== undefined || code !== 0) {
    await fs.rm(dir, { recursive: true, force: true })
    // A template from an unclean stop is no template.
    throw failure ?? new Error(`the template svc stopped with ${code}:\n${running.output()}`)
  }
  // A token is minted per start; the copies' own starts write theirs.
  await fs.rm(path.join(dir, ".svc/admin.token"), { force: true })
  return dir
}

const make = async (target: string): Promise<void> => {
  let dir: string | undefined
  for (let attempt = 1; dir === undefined; attempt++) {
    try {
      dir = await makeOnce()
    } catch (error) {
      // A port taken between `freePorts` and `listen`: try again on fresh ports.
      if (attempt >= 3 || !String(error).includes("EADDRINUSE")) throw error
    }
  }
  await fs.writeFile(path.join(dir, ".svc", readyMarker), "")
  await fs.mkdir(cacheRoot, { recursive: true })
  const renamed = await fs.rename(path.join(dir, ".svc"), target).then(
    () => true,
    () => false // another process made it first; theirs is as good
  )
  await fs.rm(dir, { recursive: true, force: true })
  if (renamed) {
    // Templates of other builds, once no run started an hour ago can still be copying them.
    for (const entry of await fs.readdir(cacheRoot)) {
      const other = path.join(cacheRoot, entry)
      if (!entry.startsWith("embedded-") || other === target) continue
      const made = await fs.stat(other).then(
        (stat) => stat.mtimeMs,
        () => Date.now()
      )
      if (Date.now() - made > 3_600_000) await fs.rm(other, { recursive: true, force: true })
    }
  }
}

let made: Promise<string> | undefined

/** The template `.svc` directory of the current build, made now if it does not exist yet. */
export const embeddedTemplate = (): Promise<string> => {
  made ??= (async () => {
    const target = await templatePath()
    if (!(await exists(path.join(target, readyMarker)))) await make(target)
    return target
  })()
  made.catch(() => {
    made = undefined
  })
  return made
}

/**
 * Puts a copy of the template into `cwd/.svc`, so `svc serve` in `cwd` starts as on a data
 * directory it made before. `cp -Rp` (owner-only modes kept) takes a fraction of `fs.cp`'s time
 * on the database's thousand files.
 */
export const seedEmbedded = async (cwd: string): Promise<void> => {
  const template = await embeddedTemplate()
  const target = path.join(cwd, ".svc")
  await exec("cp", ["-Rp", template, target])
  await fs.rm(path.join(target, readyMarker), { force: true })
}
