/**
 * Full request recording, black-box (issue 6; docs/recording.md): with `fullRequestRecording:
 * always`, every `_proxy` and `_proxy_raw` exchange of four credential placements is marked
 * recorded and leaves encrypted blobs under `<dir>/.svc/blobs`. No file under `.svc` (database,
 * blobs, spool) holds a planted credential or the admin token, and the blobs hold no body marker in
 * plain text; after shutdown the same blobs decrypt in this process to the markers, with every
 * credential the upstream reflected back redacted. With the default `never`, events say `false`
 * and no blob is written.
 */
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import { BlobStorage } from "@svc/server/events/BlobStorage"
import { type Recording, Recordings, recordedBytes } from "@svc/server/events/Recordings"
import * as Database from "@svc/server/stores/Database"
import { Encryption } from "@svc/server/crypto/Encryption"
import { Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { type SeenRequest, startUpstream, type Upstream } from "../support/Upstream.ts"

interface EventBody {
  readonly id: string
  readonly namespace: string
  readonly method: string
  readonly path: string
  readonly response_status_code: number | null
  readonly full_request_recorded: boolean
}

/** One credential placement: its auth block, its credentials and where the upstream finds it. */
interface Placement {
  readonly kind: string
  readonly auth: Record<string, unknown>
  readonly credentials: (secret: string) => Record<string, string>
  /** The credential as the upstream received it; undefined when absent. */
  readonly received: (request: SeenRequest) => string | undefined
  /** The credential as it should arrive. */
  readonly expected: (secret: string) => string
  /** That value once a recording has redacted it. */
  readonly redacted: string
}

const basicValue = (secret: string) => `Basic ${Buffer.from(`svc-user:${secret}`).toString("base64")}`

const placements: ReadonlyArray<Placement> = [
  {
    kind: "bearer",
    auth: { type: "api_key", placement: "bearer" },
    credentials: (secret) => ({ api_key: secret }),
    received: (request) => request.headers.authorization,
    expected: (secret) => `Bearer ${secret}`,
    redacted: "Bearer [redacted]"
  },
  {
    kind: "header",
    auth: { type: "api_key", placement: "header", header_name: "X-Api-Key" },
    credentials: (secret) => ({ api_key: secret }),
    received: (request) => request.headers["x-api-key"] as string | undefined,
    expected: (secret) => secret,
    redacted: "[redacted]"
  },
  {
    kind: "query",
    auth: { type: "api_key", placement: "query", query_param: "api_key" },
    credentials: (secret) => ({ api_key: secret }),
    received: (request) => request.query.get("api_key") ?? undefined,
    expected: (secret) => secret,
    redacted: "[redacted]"
  },
  {
    kind: "basic",
    auth: { type: "basic" },
    credentials: (secret) => ({ username: "svc-user", password: secret }),
    received: (request) => request.headers.authorization,
    expected: basicValue,
    redacted: "Basic [redacted]"
  }
]

const token = (prefix: string) => `${prefix}${randomBytes(12).toString("hex")}`
const requestMarker = token("REQMARK")
const responseMarker = token("RESPMARK")
const rawMarker = token("RAWMARK")
const markers = [requestMarker, responseMarker, rawMarker]

/** A connection of one placement, with its planted secret. */
interface Planted {
  readonly placement: Placement
  readonly secret: string
  readonly connectionId: string
}

/** The spellings of a planted secret that must appear nowhere (hex, so URL-encoding is identity). */
const spellings = (planted: Planted): ReadonlyArray<string> => [
  planted.secret,
  Buffer.from(planted.secret).toString("base64"),
  Buffer.from(`svc-user:${planted.secret}`).toString("base64")
]

/** Named needles (the name, never the value, goes into failure messages). */
const needlesOf = (all: ReadonlyArray<Planted>, adminToken: string): Array<[string, string]> => [
  ...all.flatMap((p) => spellings(p).map((s, i): [string, string] => [`${p.placement.kind} secret #${i}`, s])),
  ["admin token", adminToken],
  ["admin token signature", adminToken.split(".")[2] ?? adminToken]
]

const upstreamWith = async (): Promise<Upstream> => {
  const upstream = await startUpstream()
  // Reflects whatever credential arrived into a response header and the body: the recording
  // must redact it there too (defence in depth).
  upstream.route("/reflect/", (request) => {
    const credential = placements.map((p) => p.received(request)).find((value) => value !== undefined) ?? ""
    return {
      status: 200,
      headers: { "content-type": "application/json", "x-reflected-credential": credential },
      body: JSON.stringify({
        marker: responseMarker,
        credential,
        headers: request.headers,
        url: request.url,
        body: request.body.toString("utf8")
      })
    }
  })
  return upstream
}

const plantAll = async (svc: Svc, upstream: Upstream, prefix: string): Promise<Array<Planted>> => {
  const r = resources(svc)
  const ns = await r.freshNamespace(prefix)
  const out: Array<Planted> = []
  for (const placement of placements) {
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: `rec-${placement.kind}`,
        auth: placement.auth,
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const secret = token("PLANTED")
    const connection = await r.connection(connector.id, { credentials: placement.credentials(secret) })
    out.push({ placement, secret, connectionId: connection.id })
  }
  return out
}

/** One `_proxy` (JSON body) and one `_proxy_raw` (streamed body, the caller's own bearer token). */
const exchange = async (svc: Svc, upstream: Upstream, planted: Planted): Promise<void> => {
  const kind = planted.placement.kind
  const before = upstream.seen().length
  const envelope = expectStatus<{ statusCode: number; bodyRaw?: string }>(
    await svc.call("POST", `/api/v1/connections/${planted.connectionId}/_proxy`, {
      body: {
        url: `${upstream.origin}/reflect/${kind}/proxy?page=2`,
        method: "POST",
        bodyJson: { note: requestMarker }
      }
    }),
    200
  )
  expect(envelope.statusCode).toBe(200)
  const chunks = [`streamed ${rawMarker} `, "second chunk"]
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift()
      if (next === undefined) controller.close()
      else controller.enqueue(new TextEncoder().encode(next))
    }
  })
  const response = await fetch(
    `http://127.0.0.1:${svc.ports.api}/api/v1/connections/${planted.connectionId}/_proxy_raw`,
    {
      method: "POST",
      headers: {
        authorization: `Bearer ${svc.adminToken}`,
        "x-svc-upstream-url": `${upstream.origin}/reflect/${kind}/raw`,
        "content-type": "text/plain"
      },
      body,
      duplex: "half"
    } as RequestInit
  )
  const text = await response.text()
  expect(response.status).toBe(200)
  expect(text).toContain(rawMarker)
  const seen = upstream.seen().slice(before)
  expect(seen.map((s) => s.path)).toEqual([`/reflect/${kind}/proxy`, `/reflect/${kind}/raw`])
  for (const request of seen) {
    expect(planted.placement.received(request)).toBe(planted.placement.expected(planted.secret))
    expect(JSON.stringify(request.headers)).not.toContain(svc.adminToken)
  }
  expect(JSON.parse(seen[0]?.body.toString("utf8") ?? "null")).toEqual({ note: requestMarker })
  expect(seen[1]?.body.toString("utf8")).toBe(`streamed ${rawMarker} second chunk`)
}

const listEvents = async (svc: Svc, connectionId: string) =>
  expectStatus<{ items: Array<EventBody> }>(
    await svc.call("GET", `/api/v1/metrics/request-events?${new URLSearchParams({ connectionId })}`),
    200
  ).items

/** Waits for both events of a connection; answers them. */
const bothEvents = async (svc: Svc, connectionId: string, recorded: boolean) => {
  const items = await eventually(
    () => listEvents(svc, connectionId),
    (list) => list.length >= 2 && list.every((e) => e.full_request_recorded === recorded)
  )
  expect(items).toHaveLength(2)
  for (const event of items) {
    expect(event.method).toBe("POST")
    expect(event.response_status_code).toBe(200)
    expect(event.full_request_recorded).toBe(recorded)
  }
  return items
}

/** Every regular file under `root` (none when it does not exist). */
const filesUnder = async (root: string): Promise<Array<string>> => {
  const entries = await fs.readdir(root, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name))
}

/** `name in relative/path` for each needle found in each file. */
const scan = async (root: string, files: ReadonlyArray<string>, needles: ReadonlyArray<[string, string]>) => {
  const hits: Array<string> = []
  for (const file of files) {
    const bytes = await fs.readFile(file)
    for (const [name, needle] of needles) {
      if (bytes.includes(needle)) hits.push(`${name} in ${path.relative(root, file)}`)
    }
  }
  return hits
}

const waitForExit = async (pid: number) => {
  for (let waited = 0; waited < 30_000; waited += 100) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`svc ${pid} did not exit after SIGTERM`)
}

/** Decrypts recordings from a stopped embedded default's data directory, in this process. */
const readRecordings = (dataDir: string, events: ReadonlyArray<EventBody>) => {
  const sql = Database.clientLayer({ provider: "pglite", path: path.join(dataDir, "db") })
  const encryption = Encryption.layerNoDeps({ source: "file", path: path.join(dataDir, "root.key") }).pipe(
    Layer.provide(Layer.provideMerge(DataKeyRepo.layer, sql))
  )
  const recordings = Recordings.layerNoDeps().pipe(
    Layer.provide([BlobStorage.layerFilesystem(path.join(dataDir, "blobs")), encryption])
  )
  return Effect.runPromise(
    Effect.gen(function* () {
      const recorder = yield* Recordings
      return yield* Effect.forEach(events, (event) => recorder.read(event.id, event.namespace))
    }).pipe(Effect.provide(recordings))
  )
}

const bodyText = (body: Recording["request"]["body"] | undefined) => {
  const bytes = body === undefined ? undefined : recordedBytes(body)
  return bytes === undefined ? "" : Buffer.from(bytes).toString("utf8")
}

describe("fullRequestRecording: always", () => {
  let svc: Svc
  let upstream: Upstream
  let planted: Array<Planted>
  const events = new Map<string, Array<EventBody>>()

  beforeAll(async () => {
    upstream = await upstreamWith()
    svc = await launch("svc-proxy-rec-", { env: { SVC__appMetrics__requestEvents__fullRequestRecording: "always" } })
    planted = await plantAll(svc, upstream, "rec")
  }, 120_000)

  afterAll(async () => {
    await svc?.stop()
    await upstream?.close()
  })

  it("injects each placement's credentials through _proxy and _proxy_raw", async () => {
    for (const p of planted) await exchange(svc, upstream, p)
  })

  it("marks every event recorded and writes both blobs of each, owner-only", async () => {
    for (const p of planted) events.set(p.connectionId, await bothEvents(svc, p.connectionId, true))
    const blobs = path.join(svc.dir ?? "", ".svc/blobs")
    const ids = [...events.values()].flat().map((e) => e.id)
    expect(ids).toHaveLength(2 * placements.length)
    // An event is queued only once both of its blobs are stored.
    const files = await filesUnder(blobs)
    const names = files.map((file) => path.basename(file)).sort()
    expect(names).toEqual(ids.flatMap((id) => [`request-events~${id}~request`, `request-events~${id}~response`]).sort())
    for (const file of files) {
      const stat = await fs.stat(file)
      expect(stat.size).toBeGreaterThan(0)
      expect(stat.mode & 0o777).toBe(0o600)
    }
  })

  it("reads each recording back over the API, redacted; 404 across tenants and for an event without one", async () => {
    for (const p of planted) {
      for (const event of events.get(p.connectionId) ?? []) {
        const recording = expectStatus<Recording>(
          await svc.call("GET", `/api/v1/metrics/request-events/${event.id}/recording`),
          200
        )
        expect(recording.eventId).toBe(event.id)
        expect(recording.namespace).toBe(event.namespace)
        expect(recording.response?.status).toBe(200)
        const response = bodyText(recording.response?.body)
        expect(response).toContain(responseMarker)
        expect(JSON.parse(response).credential).toBe(p.placement.redacted)
        const plain = `${JSON.stringify(recording)}\n${bodyText(recording.request.body)}\n${response}`
        expect(needlesOf(planted, svc.adminToken).filter(([, needle]) => plain.includes(needle))).toEqual([])
        if ("truncated" in recording.request.body) expect(recording.request.body.truncated).toBe(false)
      }
    }
    // An actor of another namespace gets 404, as for the event itself.
    const r = resources(svc)
    const elsewhere = await r.freshNamespace("recother")
    const outsider = `rec-${Math.random().toString(36).slice(2, 8)}`
    await r.create("actors", {
      externalId: outsider,
      namespace: elsewhere,
      permissions: [{ namespace: `${elsewhere}.**`, resources: ["request-events"], verbs: ["get", "list"] }]
    })
    const someEvent = [...events.values()].flat()[0]
    const denied = await svc.call<{ code: string }>(
      "GET",
      `/api/v1/metrics/request-events/${someEvent?.id}/recording`,
      {
        token: await svc.sign(outsider)
      }
    )
    expect([denied.status, denied.body.code]).toEqual([404, "not_found"])
    const unknown = await svc.call<{ code: string }>("GET", "/api/v1/metrics/request-events/req_unknown/recording")
    expect(unknown.status).toBe(404)
  })

  it("leaves no secret, token or plain-text body under .svc, yet the blobs decrypt to the bodies", async () => {
    const pid = svc.pid?.()
    const dir = svc.dir
    if (pid === undefined || dir === undefined) throw new Error("no svc pid or dir")
    // Stopped gracefully first: the request-event queue and PGlite are flushed to disk.
    process.kill(pid, "SIGTERM")
    await waitForExit(pid)
    expect(svc.output()).toContain(`request events: ${2 * placements.length} written, 0 dropped`)
    const dataDir = path.join(dir, ".svc")
    const tokenFile = path.join(dataDir, "admin.token")
    const all = await filesUnder(dataDir)
    // The admin token's own file is where it belongs (and shows the scan finds a needle).
    expect(await scan(dataDir, [tokenFile], [["admin token", svc.adminToken]])).toEqual(["admin token in admin.token"])
    const files = all.filter((file) => file !== tokenFile)
    const database = files.filter((file) => file.startsWith(path.join(dataDir, "db") + path.sep))
    const blobs = files.filter((file) => file.startsWith(path.join(dataDir, "blobs") + path.sep))
    expect(database.length).toBeGreaterThan(0)
    expect(blobs).toHaveLength(4 * placements.length)
    // Positive control: the scan reads plain text out of the database files.
    const ids = planted.map((p): [string, string] => [p.connectionId, p.connectionId])
    expect(new Set((await scan(dataDir, database, ids)).map((hit) => hit.split(" in ")[0]))).toEqual(
      new Set(planted.map((p) => p.connectionId))
    )
    expect(await scan(dataDir, files, needlesOf(planted, svc.adminToken))).toEqual([])
    const markerNeedles = markers.map((m, i): [string, string] => [`marker #${i}`, m])
    expect(await scan(dataDir, blobs, markerNeedles)).toEqual([])
    for (const file of blobs) expect((await fs.stat(file)).size).toBeGreaterThan(0)

    // The same blobs, decrypted: the markers are there, the reflected credentials are not.
    for (const p of planted) {
      const found = await readRecordings(dataDir, events.get(p.connectionId) ?? [])
      expect(found.every(Option.isSome)).toBe(true)
      const recordings = found.flatMap((o) => (Option.isSome(o) ? [o.value] : []))
      const byPath = (suffix: string) => recordings.find((r) => new URL(r.request.url).pathname.endsWith(suffix))
      const viaProxy = byPath("/proxy")
      const viaRaw = byPath("/raw")
      expect(JSON.parse(bodyText(viaProxy?.request.body))).toEqual({ note: requestMarker })
      expect(bodyText(viaRaw?.request.body)).toBe(`streamed ${rawMarker} second chunk`)
      for (const recording of [viaProxy, viaRaw]) {
        expect(recording?.response?.status).toBe(200)
        const response = bodyText(recording?.response?.body)
        expect(response).toContain(responseMarker)
        expect(JSON.parse(response).credential).toBe(p.placement.redacted)
        expect(recording?.response?.headers["x-reflected-credential"]).toBe(p.placement.redacted)
        const plain = `${JSON.stringify(recording)}\n${bodyText(recording?.request.body)}\n${response}`
        const leaks = needlesOf(planted, svc.adminToken).filter(([, needle]) => plain.includes(needle))
        expect(leaks.map(([name]) => name)).toEqual([])
      }
      expect(bodyText(viaRaw?.response?.body)).toContain(rawMarker)
    }
  }, 120_000)

  it("writes no secret or body to the process output", () => {
    const output = svc.output()
    const needles = [
      ...needlesOf(planted, svc.adminToken),
      ...markers.map((m, i): [string, string] => [`marker #${i}`, m])
    ]
    expect(needles.filter(([, needle]) => output.includes(needle)).map(([name]) => name)).toEqual([])
  })
})

describe("fullRequestRecording: never (the default)", () => {
  let svc: Svc
  let upstream: Upstream
  let planted: Array<Planted>

  beforeAll(async () => {
    upstream = await upstreamWith()
    svc = await launch("svc-proxy-norec-")
    planted = await plantAll(svc, upstream, "norec")
  }, 120_000)

  afterAll(async () => {
    await svc?.stop()
    await upstream?.close()
  })

  it("marks events not recorded and writes no blob", async () => {
    for (const p of planted) await exchange(svc, upstream, p)
    for (const p of planted) await bothEvents(svc, p.connectionId, false)
    const first = (await bothEvents(svc, planted[0]?.connectionId ?? "", false))[0]
    const none = await svc.call<{ code: string }>("GET", `/api/v1/metrics/request-events/${first?.id}/recording`)
    expect([none.status, none.body.code]).toEqual([404, "recording_not_found"])
    expect(await filesUnder(path.join(svc.dir ?? "", ".svc/blobs"))).toEqual([])
    const output = svc.output()
    expect(needlesOf(planted, svc.adminToken).filter(([, needle]) => output.includes(needle))).toEqual([])
  })
})
