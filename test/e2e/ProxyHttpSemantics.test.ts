/**
 * HTTP semantics of the proxy routes against the bundled server, on raw sockets where a client
 * library would hide the wire (issue 32 items 11–15): `Expect: 100-continue` is answered before
 * the body is sent, a slow upload is not cut by the first-byte deadline. Each request is sent
 * twice: the first is taken by the cold door, the next by the warm door (the caller is then known).
 */
import { createServer, type Server } from "node:http"
import { type AddressInfo, connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, resources, type Svc } from "../support/Api.ts"

let svc: Svc
let upstream: Server
let origin: string
let connectionId: string

const rawPath = () => `/api/v1/connections/${connectionId}/_proxy_raw`

/** Collects what `socket` receives; `until` settles once the text so far satisfies `done` (or fails after `ms`). */
const reader = (socket: Socket) => {
  let text = ""
  const waiters: Array<() => void> = []
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString("latin1")
    for (const wake of waiters.splice(0)) wake()
  })
  const until = (done: (text: string) => boolean, what: string, ms = 20_000): Promise<string> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} never came; received: ${text.slice(0, 300)}`)), ms)
      const check = () => {
        if (done(text)) {
          clearTimeout(timer)
          resolve(text)
        } else waiters.push(check)
      }
      check()
    })
  return { until, text: () => text }
}

const open = (): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const socket = connect(svc.ports.api, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

beforeAll(async () => {
  upstream = createServer((request, response) => {
    if (request.url === "/upload") {
      let bytes = 0
      request.on("data", (chunk: Buffer) => {
        bytes += chunk.length
      })
      request.on("end", () => response.end(String(bytes)))
      return
    }
    response.writeHead(200, { "content-type": "text/plain" })
    response.end("ok")
  })
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
  const port = (upstream.address() as AddressInfo).port
  origin = `http://127.0.0.1:${port}`
  svc = await launch("svc-proxy-http-")
  const r = resources(svc)
  const ns = await r.freshNamespace("httpsem")
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "header", header_name: "X-Api-Key" },
      proxy: {
        allowed_hosts: [`127.0.0.1:${port}`],
        allow_private_networks: true,
        timeouts: { connect: "5s", first_byte: "1s", total: "60s" }
      }
    }
  })
  connectionId = (await r.connection(connector.id, { credentials: { api_key: "http-key" } })).id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await new Promise((resolve) => upstream?.close(resolve))
})

describe("_proxy_raw HTTP semantics", () => {
  it("answers Expect: 100-continue before the body is sent (a curl upload over 1 MB does not stall)", async () => {
    const size = 2 * 1024 * 1024
    for (const door of ["first (cold)", "second (warm)"]) {
      const socket = await open()
      try {
        const wire = reader(socket)
        socket.write(
          `PUT ${rawPath()} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\n` +
            `X-Svc-Upstream-URL: ${origin}/upload\r\nContent-Type: application/octet-stream\r\n` +
            `Content-Length: ${size}\r\nExpect: 100-continue\r\n\r\n`
        )
        // The body goes out only after the interim answer: without it this waits until the bound fails.
        const interim = await wire.until((text) => text.includes("\r\n\r\n"), `${door}: 100 Continue`)
        expect(interim.startsWith("HTTP/1.1 100 Continue\r\n"), `${door}: ${interim.slice(0, 40)}`).toBe(true)
        socket.write(Buffer.alloc(size, 97))
        const answer = await wire.until((text) => text.endsWith(String(size)), `${door}: the upstream's answer`)
        const final = answer.slice(answer.indexOf("\r\n\r\n") + 4)
        expect(final.startsWith("HTTP/1.1 200 OK\r\n"), `${door}: ${final.slice(0, 40)}`).toBe(true)
      } finally {
        socket.destroy()
      }
    }
  })
})
