/**
 * A private PostgreSQL 15 cluster for black-box tests that need a server of their own (TLS): a
 * fresh `initdb` in a temporary directory, a free loopback port, its unix socket in that
 * directory, `trust` authentication for `postgres` over TLS only (`hostnossl` connections are
 * rejected), and certificates generated with `openssl`: a private CA and a server certificate for
 * `IP:127.0.0.1` and `DNS:localhost`, plus a second CA that signed nothing (the "wrong CA").
 * `initdb` refuses to run as root, so under root every server command runs as the `postgres` user.
 * `stop` always leaves no process and no directory behind.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { promisify } from "node:util"
import { freePort, tempDir } from "./SvcProcess.ts"

const exec = promisify(execFile)

/** The Debian PostgreSQL 15 server binaries (package `postgresql-15`). */
export const pgBin = "/usr/lib/postgresql/15/bin"

/** A running private cluster. */
export interface PrivatePostgres {
  readonly port: number
  /** PEM files: the CA that signed the server certificate, and an unrelated CA. */
  readonly caPath: string
  readonly wrongCaPath: string
  /** `postgres://postgres@127.0.0.1:<port>/<database>` plus `query` (e.g. `sslmode=verify-full`). */
  readonly url: (database: string, query?: string) => string
  /** Runs SQL through `psql` over TLS verified against the CA; answers its unaligned output. */
  readonly psql: (database: string, sql: string) => Promise<string>
  readonly log: () => Promise<string>
  /** Stops the server (immediate mode) and removes its directory; safe to call twice. */
  readonly stop: () => Promise<void>
}

const isRoot = () => process.getuid?.() === 0

/** Runs a server command, as `postgres` when this process is root. */
const asServerUser = (command: string, args: ReadonlyArray<string>, timeoutMs = 60_000) =>
  isRoot()
    ? exec("runuser", ["-u", "postgres", "--", command, ...args], { timeout: timeoutMs })
    : exec(command, [...args], { timeout: timeoutMs })

const openssl = (args: ReadonlyArray<string>, cwd: string) => exec("openssl", [...args], { cwd, timeout: 30_000 })

/** A CA (`<name>.crt`, `<name>.key`) valid for a day. */
const makeCa = async (dir: string, name: string) => {
  await openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${name}`,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign"
    ],
    dir
  )
  return path.join(dir, `${name}.crt`)
}

/** `server.crt`/`server.key` signed by the CA `ca`, for 127.0.0.1 and localhost. */
const makeServerCertificate = async (dir: string, ca: string) => {
  await openssl(
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr"],
    dir
  )
  await fs.writeFile(
    path.join(dir, "server.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
  )
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      `${ca}.crt`,
      "-CAkey",
      `${ca}.key`,
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      "server.ext",
      "-out",
      "server.crt"
    ],
    dir
  )
  await fs.chmod(path.join(dir, "server.key"), 0o600)
}

const startOnce = async (): Promise<PrivatePostgres> => {
  const dir = await tempDir("svc-private-pg-")
  const data = path.join(dir, "data")
  const logFile = path.join(dir, "server.log")
  const port = await freePort()
  let running = false
  const stop = async () => {
    if (running) {
      running = false
      await asServerUser(`${pgBin}/pg_ctl`, ["-D", data, "-m", "immediate", "-w", "-t", "30", "stop"]).catch(() => {})
    }
    await fs.rm(dir, { recursive: true, force: true })
  }
  try {
    const caPath = await makeCa(dir, "ca")
    await makeCa(dir, "wrong-ca")
    await makeServerCertificate(dir, "ca")
    if (isRoot()) await exec("chown", ["-R", "postgres:postgres", dir], { timeout: 10_000 })
    await asServerUser(`${pgBin}/initdb`, [
      "-D",
      data,
      "-U",
      "postgres",
      "-A",
      "trust",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions"
    ])
    // TLS only over TCP; the unix socket stays open for the server's own tools.
    await fs.writeFile(
      path.join(data, "pg_hba.conf"),
      ["local all all trust", "hostssl all all 127.0.0.1/32 trust", "hostnossl all all 127.0.0.1/32 reject", ""].join(
        "\n"
      )
    )
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c ssl=on",
      `-c ssl_cert_file=${path.join(dir, "server.crt")}`,
      `-c ssl_key_file=${path.join(dir, "server.key")}`,
      `-c ssl_ca_file=${caPath}`,
      "-c fsync=off",
      "-c max_connections=60"
    ].join(" ")
    running = true
    await asServerUser(`${pgBin}/pg_ctl`, ["-D", data, "-o", options, "-l", logFile, "-w", "-t", "60", "start"], 90_000)
  } catch (error) {
    const log = await fs.readFile(logFile, "utf8").catch(() => "")
    await stop()
    throw new Error(`private PostgreSQL did not start: ${String(error)}\n${log}`)
  }
  const url = (database: string, query?: string) =>
    `postgres://postgres@127.0.0.1:${port}/${database}${query === undefined ? "" : `?${query}`}`
  const psql = async (database: string, sql: string) =>
    (
      await exec(
        "psql",
        [
          "-X",
          "-A",
          "-t",
          "-v",
          "ON_ERROR_STOP=1",
          "-c",
          sql,
          `${url(database)}?sslmode=verify-full&sslrootcert=${path.join(dir, "ca.crt")}`
        ],
        { timeout: 30_000 }
      )
    ).stdout.trim()
  return {
    port,
    caPath: path.join(dir, "ca.crt"),
    wrongCaPath: path.join(dir, "wrong-ca.crt"),
    url,
    psql,
    log: () => fs.readFile(logFile, "utf8").catch(() => ""),
    stop
  }
}

/** Starts a private TLS cluster on a free loopback port; a port lost to another listener is retried twice. */
export const startPrivatePostgres = async (): Promise<PrivatePostgres> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce()
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}
