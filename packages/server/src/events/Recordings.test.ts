import { assert, layer } from "@effect/vitest"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Exit, Layer, Logger, Option, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Envelope from "../crypto/Envelope.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { BlobStorage } from "./BlobStorage.ts"
import { BodyCapture, captureBuffered } from "./BodyCapture.ts"
import {
  defaultRecordingCap,
  type RecordingInput,
  Recordings,
  recordedBytes,
  recordingKeys,
  recordingTable
} from "./Recordings.ts"
import * as S3TestServer from "./testing/S3TestServer.ts"

const Base = Encryption.layerKey(Envelope.generateKey()).pipe(
  Layer.provideMerge(
    Layer.provideMerge(DataKeyRepo.layer, Layer.provideMerge(Migrations.layerMain, TestDatabase.pglite))
  )
)

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")
const utf8 = (value: string) => new TextEncoder().encode(value)
const namespace = "root.team1"

// Planted secrets: each in one place the rules cover.
const authz = "sk-authz-9f8e7d6c5b4a"
const apiKey = "apikey-SECRET-1234"
const queryKey = "qp-secret-5678"
const listed = 'listed"secret/with+chars= ok'
const cookie = "COOKIE-SECRET-77"
const proxyAuth = "PROXY-SECRET-88"
const setCookie = ["SETCOOKIE-SECRET-1", "SETCOOKIE-SECRET-2"]
const planted = [authz, apiKey, queryKey, listed, cookie, proxyAuth, ...setCookie]
const marker = "visible-marker-4242"

/** Every spelling of a secret a careless recorder could leave behind. */
const spellings = (secret: string) => [
  secret,
  encodeURIComponent(secret),
  JSON.stringify(secret).slice(1, -1),
  Buffer.from(secret).toString("base64")
]

const plantedInput = (eventId: string): RecordingInput => ({
  eventId,
  namespace,
  redact: { headers: ["x-api-key"], queryParams: ["api_key"] },
  secrets: [listed],
  request: {
    method: "POST",
    url: `https://api.example.com/v1/items/${encodeURIComponent(listed)}/${marker}?api_key=${queryKey}&page=2`,
    headers: {
      Authorization: `Bearer ${authz}`,
      "X-Api-Key": apiKey,
      Cookie: `session=${cookie}`,
      "Proxy-Authorization": `Basic ${proxyAuth}`,
      "X-Echo": `echo ${listed}`,
      "X-Trace-Marker": marker
    },
    body: captureBuffered(utf8(JSON.stringify({ token: listed, note: marker })), defaultRecordingCap)
  },
  response: {
    status: 201,
    headers: { "set-cookie": setCookie.map((s) => `id=${s}; HttpOnly`), "content-type": "text/plain" },
    body: captureBuffered(utf8(`token=${encodeURIComponent(listed)}&note=${marker}`), defaultRecordingCap)
  }
})

/** A stored document or recording as text with every base64 body decoded: all a reader could see. */
const visible = (value: unknown): string => {
  const bodies: Array<string> = []
  const walk = (node: unknown): void => {
    if (typeof node !== "object" || node === null) return
    for (const [key, child] of Object.entries(node)) {
      if (key === "base64" && typeof child === "string") bodies.push(Buffer.from(child, "base64").toString("utf8"))
      else walk(child)
    }
  }
  walk(value)
  return [JSON.stringify(value), ...bodies].join("\n")
}

const assertNoSecret = (haystack: string, where: string) => {
  for (const secret of planted) {
    for (const spelling of spellings(secret)) assert.notInclude(haystack, spelling, `${where} holds a secret`)
  }
}

const record = (input: RecordingInput) => Effect.flatMap(Effect.service(Recordings), (r) => r.record(input))
const read = (eventId: string, ns = namespace) => Effect.flatMap(Effect.service(Recordings), (r) => r.read(eventId, ns))

/** Plants secrets, records, then scans the raw stored bytes and the decrypted recording. */
const leakScan = <R>(eventId: string, rawBlobs: Effect.Effect<ReadonlyArray<Uint8Array>, never, R>) =>
  Effect.gen(function* () {
    assert.isTrue(yield* record(plantedInput(eventId)))
    const raw = yield* rawBlobs
    assert.isAtLeast(raw.length, 2)
    for (const blob of raw) {
      const asText = Buffer.from(blob).toString("latin1")
      assertNoSecret(asText, "a raw stored blob")
      assert.notInclude(asText, marker, "a raw blob is ciphertext: the marker is not readable in it")
    }
    const encryption = yield* Encryption
    const storage = yield* BlobStorage
    const keys = recordingKeys(eventId)
    for (const column of ["request", "response"] as const) {
      const blob = Option.getOrThrow(yield* storage.get(keys[column]))
      const opened = yield* encryption.decrypt({ table: recordingTable, column, rowId: eventId, namespace }, text(blob))
      const plain = visible(opened)
      assertNoSecret(plain, `the decrypted ${column} blob`)
      assert.include(plain, marker)
      assert.include(plain, "[redacted]")
    }
    const recording = Option.getOrThrow(yield* read(eventId))
    const seen = visible(recording)
    assertNoSecret(seen, "the read recording")
    assert.include(text(recordedBytes(recording.request.body) ?? new Uint8Array()), marker)
    assert.include(text(recordedBytes(recording.response?.body ?? { skipped: "" }) ?? new Uint8Array()), marker)
    const headers = recording.request.headers
    assert.strictEqual(headers.Authorization, "[redacted]")
    assert.strictEqual(headers["X-Api-Key"], "[redacted]")
    assert.strictEqual(headers.Cookie, "[redacted]")
    assert.strictEqual(headers["Proxy-Authorization"], "[redacted]")
    assert.strictEqual(headers["X-Echo"], "echo [redacted]")
    assert.strictEqual(headers["X-Trace-Marker"], marker)
    assert.strictEqual(
      recording.request.url,
      `https://api.example.com/v1/items/[redacted]/${marker}?api_key=[redacted]&page=2`
    )
    assert.deepStrictEqual(recording.response?.headers["set-cookie"], ["[redacted]", "[redacted]"])
    assert.strictEqual(recording.response?.headers["content-type"], "text/plain")
    assert.strictEqual(recording.response?.status, 201)
  })

const listFiles = async (dir: string): Promise<Array<Uint8Array>> => {
  const names = await fs.readdir(dir, { recursive: true, withFileTypes: true })
  const files = names.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name))
  return Promise.all(files.map((f) => fs.readFile(f)))
}

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-recordings-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const withRecordings = <A, E, R>(
  storage: Layer.Layer<BlobStorage>,
  effect: Effect.Effect<A, E, R>,
  options?: { readonly maxBodyBytes?: number }
) => Effect.provide(effect, Recordings.layerNoDeps(options).pipe(Layer.provideMerge(storage)))

layer(Base, { timeout: "60 seconds" })("Recordings (PGlite encryption)", (it) => {
  it.effect("leak scan, filesystem: no planted secret in any stored byte or in the decrypted recording", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const root = path.join(yield* tempDir, "blobs")
        yield* withRecordings(
          BlobStorage.layerFilesystem(root),
          leakScan(
            "req_FS1",
            Effect.promise(() => listFiles(root))
          )
        )
      })
    )
  )

  it.effect("leak scan, s3 (s3rver on 127.0.0.1): the same, over the server's stored objects", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* S3TestServer.start()
        const storage = BlobStorage.layerS3({
          bucket: server.bucket,
          endpoint: server.endpoint,
          forcePathStyle: true,
          credentials: {
            accessKeyId: S3TestServer.s3rverCredentials.accessKeyId,
            secretAccessKey: Redacted.make(S3TestServer.s3rverCredentials.secretAccessKey)
          }
        })
        yield* withRecordings(
          storage,
          leakScan(
            "req_S3A",
            Effect.promise(() => listFiles(path.join(server.directory, server.bucket)))
          )
        )
      })
    )
  )

  it.effect("leak scan, memory", () =>
    withRecordings(
      BlobStorage.layerMemory,
      leakScan(
        "req_MEM1",
        Effect.flatMap(Effect.service(BlobStorage), (storage) =>
          Effect.forEach(Object.values(recordingKeys("req_MEM1")), (key) =>
            Effect.map(Effect.orDie(storage.get(key)), Option.getOrThrow)
          )
        )
      )
    )
  )

  it.effect("no response: the error is recorded; skipped bodies keep their reason; absent and foreign reads", () =>
    withRecordings(
      BlobStorage.layerMemory,
      Effect.gen(function* () {
        assert.isTrue(
          yield* record({
            eventId: "req_ERR1",
            namespace,
            redact: { headers: [], queryParams: [] },
            request: {
              method: "GET",
              url: "https://api.example.com/x",
              headers: {},
              body: { skipped: "body not read" }
            },
            error: "upstream unreachable"
          })
        )
        const recording = Option.getOrThrow(yield* read("req_ERR1"))
        assert.deepStrictEqual(recording.request, {
          method: "GET",
          url: "https://api.example.com/x",
          headers: {},
          body: { skipped: "body not read" }
        })
        assert.strictEqual(recording.error, "upstream unreachable")
        assert.isUndefined(recording.response)
        assert.strictEqual(recording.eventId, "req_ERR1")
        assert.strictEqual(recording.namespace, namespace)
        assert.isTrue(Option.isNone(yield* read("req_NEVER")))
        // The namespace is bound into the ciphertext: another namespace cannot open it.
        const foreign = yield* Effect.exit(read("req_ERR1", "root.other"))
        assert.isTrue(Exit.isFailure(foreign))
        assert.deepInclude(
          Exit.isFailure(foreign) ? foreign.cause.reasons.map((r) => (r._tag === "Fail" ? r.error._tag : r._tag)) : [],
          "DecryptionFailed"
        )
        // Removal (retention) deletes both blobs.
        yield* Effect.flatMap(Effect.service(Recordings), (r) => r.remove("req_ERR1"))
        assert.isTrue(Option.isNone(yield* read("req_ERR1")))
      })
    )
  )

  it.effect("truncation keeps exactly the cap and says so; a secret cut at the cap is redacted", () =>
    withRecordings(
      BlobStorage.layerMemory,
      Effect.gen(function* () {
        const recordings = yield* Recordings
        assert.strictEqual(recordings.capBytes, 16)
        const streamed = new BodyCapture(recordings.capBytes)
        for (const chunk of ["0123456", "789abcdefgh", "ijklmnopqrstuvwxyz0123"]) streamed.push(utf8(chunk))
        const secret = "CUTSECRET99"
        const input: RecordingInput = {
          eventId: "req_CUT1",
          namespace,
          redact: { headers: [], queryParams: [] },
          secrets: [secret],
          request: { method: "PUT", url: "https://api.example.com/up", headers: {}, body: streamed.result() },
          // Handed over uncapped: the recorder applies its own cap, and the cut falls inside the secret.
          response: { status: 200, headers: {}, body: captureBuffered(utf8(`abcdefghijk${secret}tail`), 1000) }
        }
        assert.isTrue(yield* recordings.record(input))
        const recording = Option.getOrThrow(yield* recordings.read("req_CUT1", namespace))
        const request = recording.request.body
        assert.isTrue("base64" in request && request.truncated)
        assert.strictEqual("base64" in request ? request.totalBytes : -1, 40)
        assert.strictEqual(recordedBytes(request)?.byteLength, 16)
        assert.strictEqual(text(recordedBytes(request) ?? new Uint8Array()), "0123456789abcdef")
        const response = recording.response?.body ?? { skipped: "" }
        assert.isTrue("base64" in response && response.truncated)
        assert.strictEqual("base64" in response ? response.totalBytes : -1, 26)
        assert.strictEqual(text(recordedBytes(response) ?? new Uint8Array()), "abcdefghijk[redacted]")
      }),
      { maxBodyBytes: 16 }
    )
  )

  it.effect("a failing storage: record answers false, does not fail, and logs no content", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const root = path.join(dir, "a-file")
        yield* Effect.promise(() => fs.writeFile(root, "not a directory"))
        const lines: Array<string> = []
        const capture = Logger.layer([Logger.map(Logger.formatJson, (line) => lines.push(line))])
        const answer = yield* withRecordings(BlobStorage.layerFilesystem(root), record(plantedInput("req_FAIL1"))).pipe(
          Effect.provide(capture)
        )
        assert.isFalse(answer)
        const log = lines.join("\n")
        assert.include(log, "request recording not stored")
        assert.include(log, "req_FAIL1")
        assert.include(log, "ENOTDIR")
        assertNoSecret(log, "the failure log")
        assert.notInclude(log, marker)
      })
    )
  )

  it.effect("an event id outside the key scheme is refused: false, nothing stored, reads none", () =>
    withRecordings(
      BlobStorage.layerMemory,
      Effect.gen(function* () {
        for (const eventId of ["../escape", "a/b", "", "req|x"]) {
          assert.isFalse(yield* record({ ...plantedInput("req_X"), eventId }))
          assert.isTrue(Option.isNone(yield* read(eventId)))
        }
      })
    )
  )
})
