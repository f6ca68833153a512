/**
 * `port: 0` asks the operating system for a port: the start-up banner must print the port each
 * service got (not `0`), and each printed address must answer.
 */
import * as fs from "node:fs/promises"
import { afterAll, describe, expect, it } from "vitest"
import { type RunningSvc, startSvc, tempDir } from "../support/SvcProcess.ts"
import { seedEmbedded } from "../support/EmbeddedTemplate.ts"

const bannerPort = (output: string, service: string): number | undefined => {
  const match = new RegExp(`^  ${service}\\s+https?://127\\.0\\.0\\.1:(\\d+)`, "m").exec(output)
  return match?.[1] === undefined ? undefined : Number(match[1])
}

describe("port 0 listeners", () => {
  let dir: string | undefined
  let svc: RunningSvc | undefined

  afterAll(async () => {
    await svc?.stop()
    if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true })
  })

  it("the banner prints the ports the services got, and they answer", async () => {
    dir = await tempDir("svc-e2e-port0-")
    await seedEmbedded(dir)
    const running = startSvc(["serve", "--service", "api", "--service", "public", "--service", "worker"], {
      cwd: dir,
      env: { SVC__api__port: "0", SVC__public__port: "0", SVC__worker__port: "0" }
    })
    svc = running
    const deadline = Date.now() + 60_000
    while (!running.output().includes(" ready (") && Date.now() < deadline) {
      if (running.child.exitCode !== null) throw new Error(`svc exited early:\n${running.output()}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const output = running.output()
    const ports = ["api", "public", "worker"].map((service) => bannerPort(output, service))
    for (const port of ports) {
      expect(port).toBeGreaterThan(0)
      const ping = await fetch(`http://127.0.0.1:${port}/ping`)
      expect(ping.status).toBe(200)
    }
    expect(new Set(ports).size).toBe(3)
  }, 90_000)
})
