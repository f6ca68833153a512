/**
 * A host application's webhook receiver on loopback: every request is verified with the
 * independent `standardwebhooks` package against the secret(s) registered for its path, and
 * recorded with its headers and verdict. Answers are scripted per path (e.g. 500, 500, then 200).
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

export interface ReceivedEvent {
  readonly path: string
  readonly webhookId: string
  readonly timestamp: string
  readonly signature: string
  readonly body: string
  readonly payload: { readonly type: string; readonly timestamp: string; readonly data: Record<string, unknown> }
  /** The secret (by index in the path's list) that verified it, or -1 when none did. */
  readonly verifiedWith: number
  readonly status: number
  /** The sender's TCP port (to find which process sent it). */
  readonly remotePort: number
  /** `performance.now()` when it was answered. */
  readonly receivedAtMs: number
}

export interface WebhookReceiver {
  readonly url: (path: string) => string
  /** Registers the secret a path's requests must be signed with (later ones are added, not replacing). */
  readonly secret: (path: string, secret: string) => void
  /** The statuses the next requests on `path` get, in order; afterwards 200. */
  readonly script: (path: string, statuses: ReadonlyArray<number>) => void
  /** Every later request on `path` gets `status` (until `script`/`answer` again). */
  readonly answer: (path: string, status: number) => void
  /** Holds every later answer on `path` for `ms` (requests stay in flight meanwhile). */
  readonly delay: (path: string, ms: number) => void
  /** Requests received and not yet answered, with the sender's TCP port. */
  readonly inFlight: () => ReadonlyArray<{ readonly path: string; readonly remotePort: number }>
  readonly received: (path?: string) => ReadonlyArray<ReceivedEvent>
  readonly close: () => Promise<void>
}

export const startWebhookReceiver = async (): Promise<WebhookReceiver> => {
  const secrets = new Map<string, Array<string>>()
  const scripts = new Map<string, Array<number>>()
  const fixed = new Map<string, number>()
  const events: Array<ReceivedEvent> = []
  const delays = new Map<string, number>()
  const pending = new Set<{ readonly path: string; readonly remotePort: number }>()
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = req.url ?? "/"
      const body = Buffer.concat(chunks).toString("utf8")
      const headers = {
        "webhook-id": String(req.headers["webhook-id"] ?? ""),
        "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
        "webhook-signature": String(req.headers["webhook-signature"] ?? "")
      }
      const verifiedWith = (secrets.get(path) ?? []).findIndex((secret) => {
        try {
          new Webhook(secret).verify(body, headers)
          return true
        } catch {
          return false
        }
      })
      const queued = scripts.get(path)
      const status = queued !== undefined && queued.length > 0 ? (queued.shift() as number) : (fixed.get(path) ?? 200)
      let payload: ReceivedEvent["payload"]
      try {
        payload = JSON.parse(body) as ReceivedEvent["payload"]
      } catch {
        payload = { type: "unparsable", timestamp: "", data: {} }
      }
      const remotePort = req.socket.remotePort ?? 0
      const answer = () => {
        events.push({
          path,
          webhookId: headers["webhook-id"],
          timestamp: headers["webhook-timestamp"],
          signature: headers["webhook-signature"],
          body,
          payload,
          verifiedWith,
          status,
          remotePort,
          receivedAtMs: performance.now()
        })
        res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "no")
      }
      const wait = delays.get(path) ?? 0
      if (wait === 0) return answer()
      const entry = { path, remotePort }
      pending.add(entry)
      setTimeout(() => {
        pending.delete(entry)
        // A sender killed meanwhile gets no answer and the request is not counted as received.
        if (!req.socket.destroyed) answer()
      }, wait)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    secret: (path, secret) => secrets.set(path, [...(secrets.get(path) ?? []), secret]),
    script: (path, statuses) => scripts.set(path, [...statuses]),
    answer: (path, status) => {
      scripts.delete(path)
      fixed.set(path, status)
    },
    delay: (path, ms) => delays.set(path, ms),
    inFlight: () => [...pending],
    received: (path) => events.filter((event) => path === undefined || event.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
