/**
 * Capture of a request or response body for full request recording (spec 6.1): keeps at most
 * `capBytes` bytes while the body streams, counts every byte, and says when it truncated or why it
 * skipped the body. Mutable and synchronous: one instance per body, called once per chunk.
 */

/** A body as captured: its first bytes (at most the cap) and its full size, or why it was not captured. */
export type CapturedBody =
  | { readonly bytes: Uint8Array; readonly totalBytes: number; readonly truncated: boolean }
  | { readonly skipped: string }

/** The reasons svc records for a body it did not capture (docs/recording.md lists them). */
export const SkipReason = {
  /** The exchange switched protocols (WebSocket or another `Upgrade`): there is no body to keep. */
  upgrade: "connection upgraded",
  /** The body stream failed or was aborted before its end. */
  aborted: "body stream aborted",
  /** The body was never read (e.g. the request was refused before it was forwarded). */
  notRead: "body not read"
} as const

const empty = new Uint8Array(0)

/** Accumulates the first `capBytes` bytes of a streamed body; `push` copies only what it keeps. */
export class BodyCapture {
  readonly capBytes: number
  private chunks: Array<Uint8Array> = []
  private kept = 0
  private total = 0
  private skippedReason: string | undefined = undefined

  constructor(capBytes: number) {
    if (!Number.isSafeInteger(capBytes) || capBytes < 0) {
      throw new RangeError(`BodyCapture cap must be a non-negative integer, got ${capBytes}`)
    }
    this.capBytes = capBytes
  }

  /** Counts `chunk` and copies the part of it that still fits under the cap; the caller may reuse `chunk`. */
  push(chunk: Uint8Array): void {
    this.total += chunk.byteLength
    if (this.skippedReason !== undefined) return
    const room = this.capBytes - this.kept
    if (room <= 0 || chunk.byteLength === 0) return
    const take = chunk.byteLength <= room ? chunk.byteLength : room
    // `Buffer#slice` shares memory: copy through the Uint8Array constructor instead.
    this.chunks.push(new Uint8Array(chunk.subarray(0, take)))
    this.kept += take
  }

  /** Marks the body as not captured; the first reason wins and what was kept is dropped. */
  skip(reason: string): void {
    if (this.skippedReason !== undefined) return
    this.skippedReason = reason
    this.chunks = []
    this.kept = 0
  }

  /** Bytes seen so far, kept or not. */
  get totalBytes(): number {
    return this.total
  }

  /** The capture so far; may be called again after more pushes. */
  result(): CapturedBody {
    if (this.skippedReason !== undefined) return { skipped: this.skippedReason }
    return { bytes: this.joined(), totalBytes: this.total, truncated: this.total > this.kept }
  }

  private joined(): Uint8Array {
    if (this.chunks.length === 0) return empty
    if (this.chunks.length > 1) {
      const joined = new Uint8Array(this.kept)
      let offset = 0
      for (const chunk of this.chunks) {
        joined.set(chunk, offset)
        offset += chunk.byteLength
      }
      this.chunks = [joined]
    }
    return this.chunks[0] as Uint8Array
  }
}

/** The capture of a body that is already in memory (a buffered request or response). */
export const captureBuffered = (body: Uint8Array, capBytes: number): CapturedBody => {
  const capture = new BodyCapture(capBytes)
  capture.push(body)
  return capture.result()
}

/** A body that was not captured, and why. */
export const captureSkipped = (reason: string): CapturedBody => ({ skipped: reason })
