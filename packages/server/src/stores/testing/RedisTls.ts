/**
 * TLS to Redis for tests: certificates made with `openssl` (a private CA, a server certificate for
 * 127.0.0.1 by `subjectAltName IP:127.0.0.1` — also a client one, for a cluster's bus — a client certificate, and an unrelated CA that
 * verifies nothing here), and a private `redis-server` that speaks only TLS (`--port 0
 * --tls-port`). Every step is bounded; `stop` leaves no process and no directory behind.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { watchChild } from "./ChildServer.ts"

const run = promisify(execFile)

/** PEM file paths written by {@link makeRedisTlsFiles}. */
export interface RedisTlsFiles {
  readonly dir: string
  readonly ca: string
  readonly caKey: string
  readonly serverCert: string
  readonly serverKey: string
  readonly clientCert: string
  readonly clientKey: string
  /** A CA that signed none of these certificates. */
  readonly otherCa: string
}

const openssl = (cwd: string, ...args: ReadonlyArray<string>) => run("openssl", args, { cwd, timeout: 20_000 })

const selfSignedCa = (cwd: string, name: string, cn: string) =>
  openssl(
    cwd,
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${cn}`
  )

const signed = async (cwd: string, name: string, cn: string, extensions: string) => {
  await openssl(
    cwd,
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${cn}`
  )
  await fs.writeFile(path.join(cwd, `${name}.ext`), extensions)
  await openssl(
    cwd,
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`
  )
}

/** Writes a private CA, a server certificate for 127.0.0.1, a client certificate and an unrelated CA into a new directory. */
export const makeRedisTlsFiles = async (): Promise<RedisTlsFiles> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "svc-redis-tls-"))
  try {
    await selfSignedCa(dir, "ca", "svc test redis CA")
    await selfSignedCa(dir, "other-ca", "svc test unrelated CA")
    await signed(dir, "server", "127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    await signed(dir, "client", "svc", "extendedKeyUsage=clientAuth\n")
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true })
    throw error
  }
  const at = (name: string) => path.join(dir, name)
  return {
    dir,
    ca: at("ca.crt"),
    caKey: at("ca.key"),
    serverCert: at("server.crt"),
    serverKey: at("server.key"),
    clientCert: at("client.crt"),
    clientKey: at("client.key"),
    otherCa: at("other-ca.crt")
  }
}

/** A running TLS-only Redis. */
export interface TlsRedisServer {
  readonly port: number
  /** `rediss://127.0.0.1:<port>` */
  readonly url: string
  /** Runs one command through `redis-cli --tls` (with the client certificate) and answers its output, trimmed. */
  readonly command: (...args: ReadonlyArray<string>) => Promise<string>
  readonly output: () => string
  /** SIGTERM, SIGKILL after 5 s; resolves once the process has exited. Safe to call twice. */
  readonly stop: () => Promise<void>
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/**
 * Starts `redis-server --port 0 --tls-port <free>` with the server certificate; clients must show a
 * certificate of the CA when `authClients` is `yes`, may when `optional` (default).
 */
export const startTlsRedisServer = async (
  files: RedisTlsFiles,
  options: { readonly authClients?: "yes" | "optional" } = {}
): Promise<TlsRedisServer> => {
  const port = await freePort()
  const child: ChildProcess = spawn(
    "redis-server",
    [
      "--port",
      "0",
      "--tls-port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--tls-cert-file",
      files.serverCert,
      "--tls-key-file",
      files.serverKey,
      "--tls-ca-cert-file",
      files.ca,
      "--tls-auth-clients",
      options.authClients ?? "optional",
      "--save",
      "",
      "--appendonly",
      "no"
    ],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  const server = watchChild(child)
  const { alive, output } = server
  const stop = () => server.signal("SIGTERM")
  const command = async (...args: ReadonlyArray<string>) =>
    (
      await run(
        "redis-cli",
        [
          "--tls",
          "--cacert",
          files.ca,
          "--cert",
          files.clientCert,
          "--key",
          files.clientKey,
          "-h",
          "127.0.0.1",
          "-p",
          String(port),
          ...args
        ],
        { timeout: 5_000 }
      )
    ).stdout.trim()
  const deadline = Date.now() + 10_000
  for (;;) {
    if (!alive()) throw new Error(`redis-server (TLS) exited before answering:\n${output()}`)
    if ((await command("PING").catch(() => "")) === "PONG") break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`redis-server (TLS) did not answer on ${port} within 10 s:\n${output()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { port, url: `rediss://127.0.0.1:${port}`, command, output, stop }
}
