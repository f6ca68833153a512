/**
 * The client and the test kit work outside this repository (issue 35 item 5): `scripts/pack.ts`
 * packs `@svc/client` and `@svc/testing` with `npm pack`; a scratch project in the OS temp dir
 * installs the two tarballs with their dependencies from the npm registry (`--prefer-offline`: the
 * packages this repository installed come from npm's cache) and runs the host-style suite of
 * `test/examples/host-suite/` with its own vitest: a connection created and proxied through, what
 * the fake upstream received, a rate-limited call answered 429, the promise API.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"
import { repoRoot } from "../support/SvcProcess.ts"

const run = promisify(execFile)
const suiteDir = path.join(repoRoot, "test/examples/host-suite")

const installedVersion = async (name: string) =>
  (
    JSON.parse(await fs.readFile(path.join(repoRoot, "node_modules", name, "package.json"), "utf8")) as {
      version: string
    }
  ).version

let scratch: string | undefined

afterAll(async () => {
  if (scratch !== undefined) await fs.rm(scratch, { recursive: true, force: true })
})

describe("@svc/client and @svc/testing, packed and installed in a project of their own", () => {
  it("a host application's suite passes with them", async () => {
    scratch = await fs.mkdtemp(path.join(os.tmpdir(), "svc-host-app-"))
    const packs = path.join(scratch, "packs")
    const { packPackages } = (await import(pathToFileURL(path.join(repoRoot, "scripts/pack.ts")).href)) as {
      packPackages: (out: string) => Promise<ReadonlyArray<string>>
    }
    const tarballs = await packPackages(packs)
    expect(tarballs.map((t) => path.basename(t)).sort()).toEqual(["svc-client-0.1.0.tgz", "svc-testing-0.1.0.tgz"])

    const app = path.join(scratch, "app")
    await fs.mkdir(app)
    const manifest = {
      name: "host-app",
      private: true,
      type: "module",
      dependencies: {
        "@svc/client": `file:${tarballs.find((t) => t.includes("svc-client"))}`,
        "@svc/testing": `file:${tarballs.find((t) => t.includes("svc-testing"))}`,
        effect: await installedVersion("effect"),
        vitest: await installedVersion("vitest"),
        "@effect/vitest": await installedVersion("@effect/vitest")
      }
    }
    await fs.writeFile(path.join(app, "package.json"), JSON.stringify(manifest, null, 2))
    for (const file of await fs.readdir(suiteDir)) await fs.copyFile(path.join(suiteDir, file), path.join(app, file))
    // The repository's Node (24) runs npm and the suite; PATH puts it first for npm's own scripts.
    const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}` }
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: app,
      env,
      maxBuffer: 16 * 1024 * 1024
    })
    // Nothing of the monorepo leaks in: the kit's server code is in its bundle, not a workspace link.
    const installed = await fs.readdir(path.join(app, "node_modules/@svc"))
    expect(installed.sort()).toEqual(["client", "testing"])
    for (const name of installed) {
      const stat = await fs.lstat(path.join(app, "node_modules/@svc", name))
      expect(stat.isSymbolicLink()).toBe(false)
    }

    // The client is the declarations and the HttpApiClient only: no server, SQL or cluster code.
    const clientDir = path.join(app, "node_modules/@svc/client")
    const clientFiles = (await fs.readdir(path.join(clientDir, "dist"), { recursive: true })).filter((f) =>
      /\.(js|ts)$/.test(f)
    )
    expect(
      clientFiles.filter((f) => !/^(Svc(Admin)?Client\.(js|d\.ts)|chunks\/[^/]+\.js|domain\/.+\.d\.ts)$/.test(f))
    ).toEqual([])
    expect(clientFiles).toContain("SvcAdminClient.js")
    for (const file of clientFiles.filter((f) => f.endsWith(".js"))) {
      const clientCode = await fs.readFile(path.join(clientDir, "dist", file), "utf8")
      for (const serverOnly of ["HttpApiBuilder", "SqlClient", "NodeHttpServer", "Entity.make"]) {
        expect(clientCode.includes(serverOnly), `${serverOnly} in ${file}`).toBe(false)
      }
    }

    const result = await run(process.execPath, [path.join(app, "node_modules/vitest/vitest.mjs"), "run"], {
      cwd: app,
      env: { ...env, CI: "1", NO_COLOR: "1" },
      maxBuffer: 16 * 1024 * 1024
    }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`the host suite failed:\n${error.stdout ?? ""}\n${error.stderr ?? ""}`)
    })
    const output = `${result.stdout}\n${result.stderr}`
    expect(output).toMatch(/Test Files\s+3 passed \(3\)/)
    expect(output).toMatch(/Tests\s+5 passed \(5\)/)
    // Reported, never asserted (STYLE "Tests"): the promise suite prints its start-to-first-request time.
    const startLine = /svc-testing: start to first request \d+ ms/.exec(output)?.[0]
    expect(startLine).toBeDefined()
    console.log(startLine)
  }, 600_000)

  it("docs/testing.md shows the host suites exactly as they run here", async () => {
    const page = await fs.readFile(path.join(repoRoot, "docs/testing.md"), "utf8")
    for (const file of await fs.readdir(suiteDir)) {
      const suite = await fs.readFile(path.join(suiteDir, file), "utf8")
      expect(page.includes(`\`\`\`ts\n${suite}\`\`\``), file).toBe(true)
    }
  })
})
