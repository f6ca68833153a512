/**
 * A prepared `initdb` for the embedded database's first start (issue 30). PGlite runs PostgreSQL's
 * `initdb` when its data directory holds no database: 2.3 CPU-s with WebAssembly on Liftoff, and
 * a second PostgreSQL instance whose memory the process kept, so a first `svc serve` ended 100–370
 * MB above a restart. The build (`scripts/build.ts`) runs `initdb` once per PGlite version and
 * keeps the result as PGlite's own data-directory dump (a gzipped tar, ~4.5 MB) in
 * `packages/sql/pglite-template/`; a first open unpacks it into the data directory
 * ({@link extractTemplate}) before PGlite opens it, which then finds a database as on a restart.
 * A fresh `initdb` and the template give the same cluster (one `initdb` per cluster makes the
 * system identifier, which PGlite does not use). Without the file (a build that never made it)
 * PGlite runs `initdb` as before.
 *
 * The unpacking streams: the archive is gunzipped in 64 KB chunks and each file written as its
 * bytes arrive. PGlite's own `loadDataDir` (used before) holds the 40 MB tar in memory and copies
 * every file out of it; those buffers, freed, left a first start's database thread with ~57 MB
 * of malloc arena it never returned, so a first start idled ~70 MB above a restart
 * (docs/performance.md "Memory").
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { createGunzip } from "node:zlib"
import { useBaselineWasmCompiler } from "./WasmCompiler.ts"

/** Where the build keeps the template (git-ignored). */
export const templateDir = fileURLToPath(new URL("../pglite-template/", import.meta.url))

/** The version of the installed PGlite: a template is used only by the version that made it. */
export const pgliteVersion = (): string => {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite")
  let dir = path.dirname(entry)
  while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir)
  return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version
}

/** The template file of the installed PGlite. */
export const templateFile = (): string => path.join(templateDir, `initdb-${pgliteVersion()}.tar.gz`)

/**
 * The template to open `dataDir` from: `file` when `dataDir` is a directory on disk that holds
 * no database yet (no `PG_VERSION`) and `file` exists; otherwise undefined (open as is).
 */
export const templateFor = (dataDir: string, file: string = templateFile()): string | undefined => {
  if (dataDir.includes("://")) return undefined
  if (fs.existsSync(path.join(dataDir, "PG_VERSION"))) return undefined
  return fs.existsSync(file) ? file : undefined
}

const block = 512

/** A NUL-terminated text field of a tar header. */
const field = (header: Buffer, offset: number, length: number): string => {
  const bytes = header.subarray(offset, offset + length)
  const end = bytes.indexOf(0)
  return bytes.subarray(0, end === -1 ? length : end).toString("utf8")
}

/** An octal number field of a tar header. */
const octal = (header: Buffer, offset: number, length: number): number => {
  const text = field(header, offset, length).trim()
  const value = text === "" ? 0 : Number.parseInt(text, 8)
  if (!Number.isFinite(value)) throw new Error(`bad tar number "${text}"`)
  return value
}

/** The header's checksum: its bytes summed with the checksum field itself read as spaces. */
const checksumOf = (header: Buffer): number => {
  let sum = 0
  for (let i = 0; i < block; i++) sum += i >= 148 && i < 156 ? 32 : (header[i] as number)
  return sum
}

/** One entry of the archive: its path inside `dataDir`, type, mode, size. */
const entryOf = (header: Buffer, dataDir: string) => {
  if (checksumOf(header) !== octal(header, 148, 8)) throw new Error("tar header checksum mismatch")
  const name = field(header, 0, 100)
  // PGlite's archiver writes a 131-byte prefix (ustar's is 155; the rest holds its times).
  const prefix = field(header, 257, 5) === "ustar" ? field(header, 345, 131) : ""
  // Normalised from the root, so no name (`..` included) leaves `dataDir`.
  const relative = path.posix.normalize(`/${prefix === "" ? name : `${prefix}/${name}`}`).slice(1)
  const type = String.fromCharCode(header[156] as number)
  if (type !== "0" && type !== "\0" && type !== "5") throw new Error(`unsupported tar entry type "${type}": ${name}`)
  return {
    target: path.join(dataDir, relative),
    relative,
    directory: type === "5",
    mode: octal(header, 100, 8) & 0o700,
    size: type === "5" ? 0 : octal(header, 124, 12)
  }
}

/**
 * Unpacks the template `file` (a gzipped tar of PGlite's data directory, `dumpDataDir`) into
 * `dataDir`, streaming. `PG_VERSION`, whose presence marks a database (here and in PGlite), is
 * written last, so an interrupted unpacking is unpacked again at the next start.
 */
export const extractTemplate = async (file: string, dataDir: string): Promise<void> => {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  let header = Buffer.alloc(0)
  let current: { fd: number; left: number; padding: number } | undefined
  let skip = 0
  let ended = false
  let version: { target: string; mode: number; data: Array<Buffer> } | undefined
  const input = fs.createReadStream(file, { highWaterMark: 64 * 1024 }).pipe(createGunzip({ chunkSize: 64 * 1024 }))
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let at = 0
      while (at < chunk.length && !ended) {
        if (skip > 0) {
          const n = Math.min(skip, chunk.length - at)
          skip -= n
          at += n
        } else if (current !== undefined) {
          const n = Math.min(current.left, chunk.length - at)
          const bytes = chunk.subarray(at, at + n)
          if (current.fd === -1) version?.data.push(Buffer.from(bytes))
          else for (let written = 0; written < bytes.length; ) written += fs.writeSync(current.fd, bytes, written)
          current.left -= n
          at += n
          if (current.left === 0) {
            if (current.fd !== -1) fs.closeSync(current.fd)
            skip = current.padding
            current = undefined
          }
        } else {
          const n = Math.min(block - header.length, chunk.length - at)
          header = Buffer.concat([header, chunk.subarray(at, at + n)])
          at += n
          if (header.length < block) continue
          const full = header
          header = Buffer.alloc(0)
          if (full.every((b) => b === 0)) {
            ended = true
            break
          }
          const entry = entryOf(full, dataDir)
          if (entry.directory) {
            fs.mkdirSync(entry.target, { recursive: true, mode: entry.mode | 0o700 })
            continue
          }
          fs.mkdirSync(path.dirname(entry.target), { recursive: true, mode: 0o700 })
          const padding = (block - (entry.size % block)) % block
          const isVersion = entry.relative === "PG_VERSION"
          if (isVersion) version = { target: entry.target, mode: entry.mode, data: [] }
          const fd = isVersion ? -1 : fs.openSync(entry.target, "w", entry.mode | 0o600)
          if (entry.size === 0) {
            if (fd !== -1) fs.closeSync(fd)
            skip = padding
          } else current = { fd, left: entry.size, padding }
        }
      }
      if (ended) break
    }
  } finally {
    if (current !== undefined && current.fd !== -1) fs.closeSync(current.fd)
    input.destroy()
  }
  if (!ended || current !== undefined) throw new Error(`the template ${file} ends early`)
  if (version === undefined) throw new Error(`the template ${file} holds no PG_VERSION`)
  fs.writeFileSync(version.target, Buffer.concat(version.data), { mode: version.mode | 0o600 })
}

/**
 * Makes `file` when it does not exist: a fresh in-memory PGlite (`initdb`), dumped. Written to a
 * temporary name and renamed, so a reader never sees half a file; other versions' templates in
 * the same directory are removed. Answers whether it wrote one.
 */
export const writeTemplate = async (file: string = templateFile()): Promise<boolean> => {
  if (fs.existsSync(file)) return false
  useBaselineWasmCompiler()
  const { PGlite } = await import("@electric-sql/pglite")
  const db = await PGlite.create("memory://")
  const dump = await db.dumpDataDir("gzip")
  await db.close()
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const partial = `${file}.${process.pid}.partial`
  fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
  fs.renameSync(partial, file)
  for (const other of fs.readdirSync(path.dirname(file))) {
    if (other.startsWith("initdb-") && other !== path.basename(file) && !other.endsWith(".partial")) {
      fs.rmSync(path.join(path.dirname(file), other), { force: true })
    }
  }
  return true
}
