/**
 * Encryption keys over real HTTP (SECURITY.md "Encryption at rest", API-CONVENTIONS "Resources"):
 * a key reports its data key version, `POST /keys/{id}/_rotate` adds the next one, permissions
 * answer like every other route; the embedded default generates its root key once, and a root key
 * that does not match the stored data keys, or one that cannot be read, refuses to start.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError, expectStatus, launch, type Resource, rand, resources, type Svc } from "../support/Api.ts"
import { caller } from "../support/Api.ts"
import { freePorts, portEnv, runSvc, startSvc, tempDir, waitForHttp } from "../support/SvcProcess.ts"

interface KeyBody extends Resource {
  readonly version: number
}

let svc: Svc
let admin: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-keys-", { fresh: true })
  admin = resources(svc)
}, 120_000)

afterAll(async () => {
  await svc?.stop()
})

describe("keys", () => {
  it("reports version 1 on create and adds a version on every rotation", async () => {
    const ns = await admin.freshNamespace("keys")
    const key = await admin.create<KeyBody>("keys", { namespace: ns, name: "main" })
    expect(key.id).toMatch(/^key_[a-z2-7]{26}$/)
    expect(key.version).toBe(1)
    const rotated = expectStatus<KeyBody>(await svc.call("POST", `/api/v1/keys/${key.id}/_rotate`), 200)
    expect({ id: rotated.id, name: rotated.name, namespace: rotated.namespace, version: rotated.version }).toEqual({
      id: key.id,
      name: "main",
      namespace: ns,
      version: 2
    })
    expect((await admin.get<KeyBody>("keys", key.id)).version).toBe(2)
    const again = await svc.call<KeyBody>("POST", `/api/v1/keys/${key.id}/_rotate`, { service: "admin-api" })
    expect(expectStatus<KeyBody>(again, 200).version).toBe(3)
    const listed = await admin.list<KeyBody>("keys", { namespace: ns })
    expect(listed.items.map((item) => [item.id, item.version])).toEqual([[key.id, 3]])
  })

  it("answers 404 for an unknown or deleted key", async () => {
    expectError(await svc.call("POST", "/api/v1/keys/key_aaaaaaaaaaaaaaaaaaaaaaaaaa/_rotate"), 404, "not_found")
    const key = await admin.create<KeyBody>("keys", { namespace: await admin.freshNamespace("gone") })
    expect((await svc.call("DELETE", `/api/v1/keys/${key.id}`)).status).toBe(204)
    expectError(await svc.call("POST", `/api/v1/keys/${key.id}/_rotate`), 404, "not_found")
  })

  it("needs keys:update like PATCH: 403 when the key is visible, 404 when it is not, 401 without a token", async () => {
    const parent = await admin.freshNamespace("perm")
    const mine = (await admin.namespace(`${parent}.mine`)).path
    const theirs = (await admin.namespace(`${parent}.theirs`)).path
    const visible = await admin.create<KeyBody>("keys", { namespace: mine })
    const hidden = await admin.create<KeyBody>("keys", { namespace: theirs })
    const actor = async (permissions: ReadonlyArray<{ namespace: string; verbs: ReadonlyArray<string> }>) => {
      const externalId = `keys-${rand()}`
      await admin.create("actors", {
        externalId,
        namespace: parent,
        permissions: permissions.map((p) => ({ namespace: p.namespace, resources: ["keys"], verbs: p.verbs }))
      })
      return svc.sign(externalId)
    }
    const reader = await actor([{ namespace: `${mine}.**`, verbs: ["get", "list"] }])
    const writer = await actor([
      { namespace: `${mine}.**`, verbs: ["get", "update"] },
      { namespace: `${theirs}.**`, verbs: ["get"] }
    ])
    const restricted = await svc.sign("admin", {
      permissions: [{ namespace: `${mine}.**`, resources: ["keys"], verbs: ["get", "update"] }]
    })
    const rotate = (id: string, token: string | null) => svc.call("POST", `/api/v1/keys/${id}/_rotate`, { token })
    const patch = (id: string, token: string | null) =>
      svc.call("PATCH", `/api/v1/keys/${id}`, { token, body: { labels: { touched: "yes" } } })
    const cases: ReadonlyArray<readonly [string, string | null, KeyBody, number, string]> = [
      ["reader, own key", reader, visible, 403, "forbidden"],
      ["reader, other key", reader, hidden, 403, "forbidden"],
      ["writer, key it may only read", writer, hidden, 403, "forbidden"],
      ["restricted token, key outside it", restricted, hidden, 404, "not_found"],
      ["anonymous", null, visible, 401, "unauthorized"]
    ]
    for (const [label, token, key, status, code] of cases) {
      expectError(await rotate(key.id, token), status, code)
      expect((await patch(key.id, token)).status, `${label}: PATCH answers like _rotate`).toBe(status)
    }
    expect(expectStatus<KeyBody>(await rotate(visible.id, writer), 200).version).toBe(2)
    expect(expectStatus<KeyBody>(await rotate(visible.id, restricted), 200).version).toBe(3)
    expect((await admin.get<KeyBody>("keys", hidden.id)).version).toBe(1)
  })

  it("the embedded default generated its root key owner-only", async () => {
    expect(svc.dir).toBeDefined()
    const file = path.join(svc.dir ?? "", ".svc", "root.key")
    const stat = await fs.stat(file)
    expect(stat.mode & 0o777).toBe(0o600)
    expect(Buffer.from((await fs.readFile(file, "utf8")).trim(), "base64").length).toBe(32)
    expect(svc.output()).toContain(`generated an encryption root key at ${file}`)
  })
})

describe("root key at start-up", () => {
  it("refuses a root key that does not match the stored data keys, or one it cannot use", async () => {
    const dir = await tempDir("svc-e2e-rootkey-")
    try {
      const ports = await freePorts()
      const first = randomBytes(32).toString("base64")
      const env = { ...portEnv(ports), SVC_TEST_ROOT_KEY: first }
      await fs.writeFile(path.join(dir, "svc.yaml"), "encryption: { root_key: { env: SVC_TEST_ROOT_KEY } }\n")
      const running = startSvc(["serve"], { cwd: dir, env })
      try {
        await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 80_000)
        const tokenFile = path.join(dir, ".svc/admin.token")
        for (let waited = 0; waited < 20_000; waited += 100) {
          if ((await fs.stat(tokenFile).catch(() => undefined))?.size) break
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        const call = caller(ports, (await fs.readFile(tokenFile, "utf8")).trim())
        const key = expectStatus<KeyBody>(await call("POST", "/api/v1/keys", { body: { namespace: "root" } }), 201)
        expect(key.version).toBe(1)
      } finally {
        expect(await running.stop()).toBe(0)
      }
      await expect(fs.stat(path.join(dir, ".svc", "root.key"))).rejects.toThrow()

      const other = await runSvc(["serve"], {
        cwd: dir,
        env: { ...env, SVC_TEST_ROOT_KEY: randomBytes(32).toString("base64") }
      })
      expect(other.code).toBe(1)
      expect(other.output).toContain("is not the one that wrapped the stored data keys")
      expect(other.output).not.toContain(first)

      const missing = await runSvc(["serve"], { cwd: dir, env: portEnv(ports) })
      expect(missing.code).toBe(1)
      expect(missing.output).toContain(
        "cannot use the encryption root key from the environment variable SVC_TEST_ROOT_KEY (encryption.root_key.env): it is not set"
      )
      const short = await runSvc(["serve"], { cwd: dir, env: { ...env, SVC_TEST_ROOT_KEY: "c2hvcnQ=" } })
      expect(short.code).toBe(1)
      expect(short.output).toContain("it decodes to 5 bytes; 32 are required")
      expect(short.output).not.toContain("c2hvcnQ=")
    } finally {
      await fs.rm(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
