/**
 * Webhooks to the host (issue 34; API-CONVENTIONS "Webhooks to the host"), black-box on the
 * embedded default: a loopback receiver verifies every request with the independent
 * `standardwebhooks` package. Events come from the real flows that cause them; endpoints filter
 * by event type, namespace subtree and label selector; another namespace's actor sees nothing;
 * a receiver answering 500 twice then 200 gets the same webhook-id three times and the log shows
 * the attempts; the secret is shown only on create and rotation and later attempts use the new
 * one; one endpoint's attempts in flight are bounded and a slow receiver does not hold another
 * endpoint back; the cli manages endpoints; 20 undelivered events survive a SIGKILL and are
 * delivered after the restart.
 * Retry waits are shortened with `webhooks.retry_schedule` (no test sleeps a schedule).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectStatus, launch, type PageBody, rand, resources, type Svc } from "../support/Api.ts"
import { tempDir } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

const cliBin = path.resolve(import.meta.dirname, "../../packages/cli/bin/cli")

/** Runs `bin/cli <args> --apiUrl <api>` in the svc's directory (its admin token) to its end. */
const cli = async (args: ReadonlyArray<string>) => {
  const home = await tempDir("svc-webhooks-cli-")
  const child = spawn(cliBin, [...args, "--apiUrl", `http://127.0.0.1:${svc.ports.api}`], {
    cwd: svc.dir,
    env: {
      ...process.env,
      HOME: home,
      NO_COLOR: "1",
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`
    }
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  child.stdin.end("")
  const code = await new Promise<number | null>((resolve) => child.on("close", (exit) => resolve(exit)))
  await fs.rm(home, { recursive: true, force: true })
  return { code, stdout, stderr }
}

interface WebhookBody {
  readonly id: string
  readonly namespace: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly label_selector: string | null
  readonly state: string
  readonly secret?: string
}

interface DeliveryBody {
  readonly id: string
  readonly event_type: string
  readonly webhook_id: string
  readonly state: string
  readonly attempts: number
  readonly last_status_code: number | null
  readonly last_error: string | null
}

let svc: Svc
let receiver: WebhookReceiver
let upstream: Upstream

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  upstream = await startUpstream()
  upstream.route("/", () => ({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }))
  upstream.route("/slow-down", () => ({ status: 429, headers: { "retry-after": "30" }, body: "slow down" }))
  svc = await launch("svc-webhooks-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__webhooks__retry_schedule: "[300ms, 300ms, 300ms]",
      SVC__webhooks__poll_interval: "100ms"
    }
  })
}, 120_000)

afterAll(async () => {
  if (process.env.WEBHOOKS_TEST_DEBUG === "1") console.log(svc?.output())
  await svc?.stop()
  await receiver?.close()
  await upstream?.close()
})

/** Creates an endpoint for `path` and registers its secret with the receiver. */
const endpoint = async (namespace: string, path: string, extra: Record<string, unknown> = {}, token?: string) => {
  const created = expectStatus<WebhookBody>(
    await svc.call<WebhookBody>("POST", "/api/v1/webhooks", {
      body: { namespace, url: receiver.url(path), ...extra },
      ...(token === undefined ? {} : { token })
    }),
    201
  )
  expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
  receiver.secret(path, created.secret as string)
  return created
}

const types = (path: string) => receiver.received(path).map((event) => event.payload.type)

describe("webhooks", () => {
  it("delivers signed connection and task events from the real flows, filtered by type, subtree and selector", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("wh")
    const child = (await r.namespace(`${ns}.team`)).path
    const other = await r.freshNamespace("whother")
    const all = `/all-${rand()}`
    const onlyCreated = `/created-${rand()}`
    const selected = `/selected-${rand()}`
    const elsewhere = `/elsewhere-${rand()}`
    await endpoint(ns, all)
    await endpoint(ns, onlyCreated, { events: ["connection.created"] })
    await endpoint(ns, selected, { label_selector: "tier=gold" })
    await endpoint(other, elsewhere)

    const connector = await r.publishedConnector(child)
    const plain = await r.connection(connector.id, { name: "plain" })
    const gold = await r.connection(connector.id, { name: "gold", labels: { tier: "gold" } })
    const disconnect = expectStatus<{ task_id?: string; id?: string }>(
      await svc.call("POST", `/api/v1/connections/${plain.id}/_disconnect`, { body: {} }),
      202
    )
    expect(disconnect).toBeDefined()

    const seen = await eventually(
      async () => types(all),
      (list) => list.filter((t) => t === "connection.created").length >= 2 && list.includes("task.completed")
    )
    expect(seen.filter((t) => t === "connection.created")).toHaveLength(2)
    expect(seen).toContain("connection.configured")
    expect(seen).toContain("connection.disconnected")
    expect(seen).toContain("task.completed")

    // Every request verified with the receiver's own library, `webhook-id` is a msg_ id.
    for (const event of receiver.received(all)) {
      expect(event.verifiedWith).toBe(0)
      expect(event.webhookId).toMatch(/^msg_[a-z2-7]{26}$/)
      expect(Math.abs(Number(event.timestamp) - Date.now() / 1000)).toBeLessThan(600)
    }
    const created = receiver.received(all).find((e) => e.payload.type === "connection.created")
    expect(created?.payload.data).toMatchObject({
      connection_id: expect.stringMatching(/^cxn_/),
      namespace: child,
      connector_id: connector.id
    })
    expect(typeof created?.payload.data.sequence).toBe("number")
    const disconnected = receiver.received(all).find((e) => e.payload.type === "connection.disconnected")
    expect(disconnected?.payload.data.connection_id).toBe(plain.id)

    // Filters: event type; label selector; namespace subtree (the other namespace's endpoint gets nothing).
    await eventually(
      async () => types(onlyCreated).length,
      (n) => n >= 2
    )
    expect(new Set(types(onlyCreated))).toEqual(new Set(["connection.created"]))
    await eventually(
      async () => types(selected),
      (list) => list.includes("connection.configured")
    )
    for (const event of receiver.received(selected)) expect(event.payload.data.connection_id).toBe(gold.id)
    expect(receiver.received(elsewhere)).toHaveLength(0)
  }, 90_000)

  it("reports migrations, required actions, failed tasks and cool-downs from their real flows", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whflow")
    const hookPath = `/flow-${rand()}`
    await endpoint(ns, hookPath)
    const form = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
      type: "object",
      properties,
      required,
      additionalProperties: false
    })
    const def = (extra: { configureRequired?: ReadonlyArray<string>; preconnectRequired?: boolean; up?: string }) => ({
      type: "demo",
      auth: { type: "none" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
      setup_flow: {
        ...(extra.preconnectRequired === true
          ? { preconnect: { steps: [{ id: "pre", json_schema: form({ tenant: { type: "string" } }, ["tenant"]) }] } }
          : {}),
        configure: {
          steps: [
            {
              id: "basics",
              json_schema: form({ host: { type: "string" }, workspace: { type: "string" } }, extra.configureRequired)
            }
          ]
        }
      },
      ...(extra.up === undefined ? {} : { migrations: { up: { javascript: extra.up } } })
    })
    const addVersion = async (connectorId: string, definition: unknown) => {
      const version = expectStatus<{ version: number }>(
        await svc.call("POST", `/api/v1/connectors/${connectorId}/versions`, { body: { definition } }),
        201
      )
      await r.publish(connectorId, version.version)
      return version.version
    }
    const migrate = async (connectionId: string, target: number) => {
      const handle = expectStatus<{ task_id: string }>(
        await svc.call("POST", `/api/v1/connections/${connectionId}/_migrate_version`, {
          body: { target_version: target, timeout_seconds: 60 }
        }),
        202
      )
      const task = await eventually(
        async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${handle.task_id}`), 200),
        (t) => t.state !== "active"
      )
      return { taskId: handle.task_id, state: task.state }
    }
    const eventsOf = (connectionId: string) =>
      receiver
        .received(hookPath)
        .filter((e) => e.payload.data.connection_id === connectionId)
        .map((e) => e.payload)

    // A migration that needs new consent: migrated, unhealthy, re-authorization required, task completed.
    const reauthConnector = expectStatus<{ id: string }>(
      await svc.call("POST", "/api/v1/connectors", { body: { namespace: ns, definition: def({}) } }),
      201
    ).id
    await r.publish(reauthConnector, 1)
    const reauth = await r.connection(reauthConnector, { configuration: { host: "h" } })
    await addVersion(reauthConnector, def({ preconnectRequired: true, configureRequired: ["workspace"] }))
    const reauthRun = await migrate(reauth.id, 2)
    expect(reauthRun.state).toBe("completed")

    // A migration that needs setup input: setup required.
    const setupConnector = expectStatus<{ id: string }>(
      await svc.call("POST", "/api/v1/connectors", { body: { namespace: ns, definition: def({}) } }),
      201
    ).id
    await r.publish(setupConnector, 1)
    const setup = await r.connection(setupConnector, { configuration: { host: "h" } })
    await addVersion(setupConnector, def({ configureRequired: ["workspace"] }))
    expect((await migrate(setup.id, 2)).state).toBe("completed")

    // A migration whose hook throws: task failed.
    const failConnector = expectStatus<{ id: string }>(
      await svc.call("POST", "/api/v1/connectors", { body: { namespace: ns, definition: def({}) } }),
      201
    ).id
    await r.publish(failConnector, 1)
    const failing = await r.connection(failConnector, { configuration: { host: "h" } })
    await addVersion(failConnector, def({ up: `(() => { throw new TypeError("no way") })()` }))
    const failedRun = await migrate(failing.id, 2)
    expect(failedRun.state).toBe("failed")

    // An upstream 429 starts the connection's cool-down.
    const proxied = await fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${setup.id}/_proxy`, {
      method: "POST",
      headers: { authorization: `Bearer ${svc.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `${upstream.origin}/slow-down`, method: "GET" })
    })
    expect(proxied.status).toBe(200)

    await eventually(
      async () => [...eventsOf(reauth.id), ...eventsOf(setup.id), ...eventsOf(failing.id)].map((e) => e.type),
      (types) =>
        ["connection.reauthorization_required", "connection.setup_required", "connection.cool_down_started"].every(
          (t) => types.includes(t)
        ) &&
        types.filter((t) => t === "task.completed").length >= 2 &&
        types.includes("task.failed")
    )
    const reauthEvents = eventsOf(reauth.id)
    expect(reauthEvents.find((e) => e.type === "connection.migrated")?.data).toMatchObject({
      connection_id: reauth.id,
      namespace: ns,
      connector_id: reauthConnector,
      source_version: 1,
      target_version: 2
    })
    expect(reauthEvents.find((e) => e.type === "connection.health_changed")?.data).toMatchObject({
      health_state: "unhealthy",
      previous: "healthy",
      reason: "migration"
    })
    expect(reauthEvents.map((e) => e.type)).toContain("connection.reauthorization_required")
    expect(reauthEvents.find((e) => e.type === "task.completed")?.data).toMatchObject({
      task_id: reauthRun.taskId,
      task_type: "migrate_version"
    })
    expect(eventsOf(setup.id).map((e) => e.type)).toContain("connection.setup_required")
    const coolDown = eventsOf(setup.id).find((e) => e.type === "connection.cool_down_started")
    expect(Date.parse(String(coolDown?.data.until))).toBeGreaterThan(Date.now())
    const failed = eventsOf(failing.id).find((e) => e.type === "task.failed")
    expect(failed?.data).toMatchObject({ task_id: failedRun.taskId, connection_id: failing.id })
    expect(eventsOf(failing.id).map((e) => e.type)).not.toContain("connection.migrated")
    // Per connection, the sequence numbers grow with the order of the changes.
    const sequences = reauthEvents.map((e) => Number(e.data.sequence)).sort((a, b) => a - b)
    expect(new Set(sequences).size).toBe(sequences.length)
    for (const event of receiver.received(hookPath)) expect(event.verifiedWith).toBe(0)
  }, 120_000)

  it("retries a receiver answering 500 twice with the same webhook-id, and logs the attempts", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whretry")
    const path = `/retry-${rand()}`
    const hook = await endpoint(ns, path, { events: ["webhook.test"] })
    receiver.script(path, [500, 500])
    const sent = expectStatus<{ delivery_id: string; webhook_id: string }>(
      await svc.call("POST", `/api/v1/webhooks/${hook.id}/_test`),
      202
    )
    const log = await eventually(
      async () =>
        expectStatus<PageBody<DeliveryBody>>(
          await svc.call<PageBody<DeliveryBody>>("GET", `/api/v1/webhooks/${hook.id}/deliveries`),
          200
        ),
      (page) => page.items[0]?.state === "succeeded"
    )
    const requests = receiver.received(path)
    expect(requests.map((e) => e.status)).toEqual([500, 500, 200])
    expect(new Set(requests.map((e) => e.webhookId))).toEqual(new Set([sent.webhook_id]))
    for (const event of requests) expect(event.verifiedWith).toBe(0)
    expect(requests[0]?.payload.type).toBe("webhook.test")
    expect(log.items[0]).toMatchObject({
      id: sent.delivery_id,
      event_type: "webhook.test",
      webhook_id: sent.webhook_id,
      state: "succeeded",
      attempts: 3,
      last_status_code: 200,
      last_error: null
    })

    // Redelivery sends the same message again.
    expectStatus(await svc.call("POST", `/api/v1/webhooks/${hook.id}/deliveries/${sent.delivery_id}/_redeliver`), 202)
    await eventually(
      async () => receiver.received(path).length,
      (n) => n >= 4
    )
    expect(receiver.received(path)[3]?.webhookId).toBe(sent.webhook_id)
  }, 60_000)

  it("fails a delivery after the schedule, shows the secret only on create and rotation, signs with the new secret after rotation", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whrot")
    const path = `/rotate-${rand()}`
    const hook = await endpoint(ns, path, { events: ["webhook.test"] })
    const read = expectStatus<WebhookBody>(await svc.call<WebhookBody>("GET", `/api/v1/webhooks/${hook.id}`), 200)
    expect(read.secret).toBeUndefined()
    const listed = expectStatus<PageBody<WebhookBody>>(
      await svc.call<PageBody<WebhookBody>>("GET", `/api/v1/webhooks?namespace=${ns}`),
      200
    )
    expect(listed.items.map((w) => w.id)).toEqual([hook.id])
    expect(JSON.stringify(listed)).not.toContain(hook.secret as string)

    receiver.answer(path, 503)
    const failing = expectStatus<{ delivery_id: string }>(
      await svc.call("POST", `/api/v1/webhooks/${hook.id}/_test`),
      202
    )
    const failed = await eventually(
      async () =>
        expectStatus<PageBody<DeliveryBody>>(
          await svc.call<PageBody<DeliveryBody>>("GET", `/api/v1/webhooks/${hook.id}/deliveries?state=failed`),
          200
        ),
      (page) => page.items.length === 1
    )
    // One first attempt and the three retries of the schedule.
    expect(failed.items[0]).toMatchObject({
      id: failing.delivery_id,
      state: "failed",
      attempts: 4,
      last_status_code: 503
    })

    const rotated = expectStatus<WebhookBody>(
      await svc.call<WebhookBody>("POST", `/api/v1/webhooks/${hook.id}/_rotate_secret`),
      200
    )
    expect(rotated.secret).not.toBe(hook.secret)
    receiver.secret(path, rotated.secret as string)
    receiver.answer(path, 200)
    const before = receiver.received(path).length
    await svc.call("POST", `/api/v1/webhooks/${hook.id}/_test`)
    const after = await eventually(
      async () => receiver.received(path),
      (list) => list.length > before
    )
    // Index 1: verified with the rotated secret only.
    expect(after[before]?.verifiedWith).toBe(1)
  }, 60_000)

  it("bounds one endpoint's attempts in flight; a slow receiver does not hold another endpoint back", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whfair")
    const slowPath = `/slow-${rand()}`
    const fastPath = `/fast-${rand()}`
    const slow = await endpoint(ns, slowPath, { events: ["webhook.test"] })
    const fast = await endpoint(ns, fastPath, { events: ["webhook.test"] })
    receiver.delay(slowPath, 2_000)
    for (let i = 0; i < 8; i++) expectStatus(await svc.call("POST", `/api/v1/webhooks/${slow.id}/_test`), 202)
    const held = () => receiver.inFlight().filter((request) => request.path === slowPath).length
    await eventually(
      async () => held(),
      (n) => n > 0
    )
    expectStatus(await svc.call("POST", `/api/v1/webhooks/${fast.id}/_test`), 202)
    let most = 0
    const fastDone = await eventually(
      async () => {
        most = Math.max(most, held())
        return receiver.received(fastPath).length
      },
      (n) => n === 1
    )
    expect(fastDone).toBe(1)
    // The fast endpoint was served while the slow one still had attempts held.
    expect(held()).toBeGreaterThan(0)
    await eventually(
      async () => {
        most = Math.max(most, held())
        return receiver.received(slowPath).length
      },
      (n) => n === 8,
      60_000
    )
    // webhooks.concurrency_per_endpoint (default 4).
    expect(most).toBeLessThanOrEqual(4)
    expect(most).toBeGreaterThan(1)
  }, 90_000)

  it("shows another namespace's actor nothing", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whacl")
    const hook = await endpoint(ns, `/acl-${rand()}`)
    const stranger = await r.freshNamespace("whstranger")
    const actor = expectStatus<{ id: string; externalId: string }>(
      await svc.call("POST", "/api/v1/actors", {
        body: {
          namespace: stranger,
          externalId: `stranger-${rand()}`,
          permissions: [{ namespace: `${stranger}.**`, resources: ["*"], verbs: ["*"] }]
        }
      }),
      201
    )
    const token = await svc.sign(actor.externalId)
    expect((await svc.call("GET", `/api/v1/webhooks/${hook.id}`, { token })).status).toBe(404)
    expect((await svc.call("GET", `/api/v1/webhooks/${hook.id}/deliveries`, { token })).status).toBe(404)
    expect((await svc.call("POST", `/api/v1/webhooks/${hook.id}/_test`, { token })).status).toBe(404)
    const page = expectStatus<PageBody<WebhookBody>>(await svc.call("GET", "/api/v1/webhooks", { token }), 200)
    expect(page.items).toHaveLength(0)
  }, 30_000)

  it("manages endpoints and deliveries with cli webhooks", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whcli")
    const hookPath = `/cli-${rand()}`
    const created = await cli([
      "webhooks",
      "create",
      "--namespace",
      ns,
      "--url",
      receiver.url(hookPath),
      "--event",
      "webhook.test",
      "--event",
      "connection.created"
    ])
    expect(created.stderr).toBe("")
    expect(created.code).toBe(0)
    const hook = JSON.parse(created.stdout) as WebhookBody
    expect(hook.events).toEqual(["webhook.test", "connection.created"])
    receiver.secret(hookPath, hook.secret as string)

    const listed = await cli(["webhooks", "list", "--namespace", ns, "-o", "json"])
    expect(listed.code).toBe(0)
    const items = JSON.parse(listed.stdout) as Array<WebhookBody>
    expect(items.map((w) => w.id)).toEqual([hook.id])
    expect(listed.stdout).not.toContain(hook.secret as string)

    const sent = JSON.parse((await cli(["webhooks", "test", hook.id])).stdout) as { delivery_id: string }
    await eventually(
      async () => receiver.received(hookPath).length,
      (n) => n >= 1
    )
    const log = await eventually(
      async () =>
        JSON.parse((await cli(["webhooks", "deliveries", hook.id, "-o", "json"])).stdout) as Array<DeliveryBody>,
      (list) => list[0]?.state === "succeeded"
    )
    expect(log[0]).toMatchObject({ id: sent.delivery_id, state: "succeeded", attempts: 1 })
    const table = await cli(["webhooks", "deliveries", hook.id])
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+EVENT\s+WEBHOOK-ID\s+STATE\s+ATTEMPTS/)

    const again = await cli(["webhooks", "redeliver", hook.id, sent.delivery_id])
    expect(again.code).toBe(0)
    await eventually(
      async () => receiver.received(hookPath).length,
      (n) => n >= 2
    )
    expect(new Set(receiver.received(hookPath).map((e) => e.webhookId)).size).toBe(1)
    for (const event of receiver.received(hookPath)) expect(event.verifiedWith).toBe(0)

    expect((await cli(["webhooks", "delete", hook.id])).code).toBe(0)
    expect((await svc.call("GET", `/api/v1/webhooks/${hook.id}`)).status).toBe(404)
  }, 90_000)

  it("delivers 20 events left undelivered by a SIGKILL after the restart", async () => {
    const r = resources(svc)
    const ns = await r.freshNamespace("whkill")
    const path = `/kill-${rand()}`
    await endpoint(ns, path, { events: ["connection.created"] })
    // Nothing is answered before the kill: the first attempts are held in flight, the rest wait.
    receiver.delay(path, 30_000)
    const connector = await r.publishedConnector(ns)
    const ids: Array<string> = []
    for (let i = 0; i < 20; i++) ids.push((await r.connection(connector.id, { name: `c${i}` })).id)
    await eventually(
      async () => receiver.inFlight().filter((request) => request.path === path).length,
      (n) => n > 0
    )
    const pid = svc.pid?.()
    expect(pid).toBeDefined()
    process.kill(pid as number, "SIGKILL")
    expect(receiver.received(path)).toHaveLength(0)
    receiver.delay(path, 0)
    await svc.restart?.()
    const delivered = await eventually(
      async () =>
        new Set(
          receiver
            .received(path)
            .filter((e) => e.status === 200)
            .map((e) => String(e.payload.data.connection_id))
        ),
      (set) => ids.every((id) => set.has(id)),
      60_000
    )
    expect([...delivered].sort()).toEqual([...ids].sort())
    for (const event of receiver.received(path)) expect(event.verifiedWith).toBe(0)
  }, 180_000)
})
