/**
 * The body of a streamed upstream answer on its way to the caller (`_proxy_raw`, spec 4.2),
 * written chunk by chunk straight to the caller's response (issue 16: no `Readable` and `pipe`
 * in between, whose stream machinery cost a few per cent of CPU per request).
 *
 * Back-pressure runs end to end: when the response's buffer is full (`write` answers false) the
 * upstream exchange is paused until the response drains. Chunks that arrive before the response
 * is attached (the slow path attaches it after the pipeline's stages ran) are held, and the
 * upstream is paused once {@link highWaterMark} bytes are held.
 */

/** Bytes held before a response is attached, past which the upstream is paused. */
export const highWaterMark = 64 * 1024

/** The upstream side a relay steers: undici's dispatch controller. */
export interface UpstreamFlow {
  readonly paused: boolean
  pause(): void
  resume(): void
}

/** The trailer fields of an answer (lower-case names), as undici parses them. */
export type Trailers = Readonly<Record<string, string | ReadonlyArray<string>>>

/** Where a relayed body goes: the caller's response. */
export interface RelaySink {
  write(chunk: Uint8Array): boolean
  end(): void
  /** Given the answer's trailers just before `end`, when the caller asked for them. */
  addTrailers?(trailers: Record<string, string | Array<string>>): void
  once(event: "drain", listener: () => void): unknown
}

export class RelayBody {
  readonly #flow: UpstreamFlow
  readonly #onDestroy: () => void
  #sink: RelaySink | undefined
  #held: Array<Uint8Array> = []
  #heldBytes = 0
  #ended = false
  #cut = false
  #destroyed = false
  #draining = false
  #onCut: (() => void) | undefined
  #trailers: Trailers | undefined
  #withTrailers = false

  /** `onDestroy` runs when the caller's side gives the body up before it ended (abort the upstream). */
  constructor(flow: UpstreamFlow, onDestroy: () => void) {
    this.#flow = flow
    this.#onDestroy = onDestroy
  }

  /** True once the caller's side gave the body up. */
  get destroyed(): boolean {
    return this.#destroyed
  }

  // The upstream's side.

  /** A chunk of the body arrived. */
  push(chunk: Uint8Array): void {
    if (this.#destroyed || this.#ended) return
    const sink = this.#sink
    if (sink === undefined) {
      this.#held.push(chunk)
      this.#heldBytes += chunk.byteLength
      if (this.#heldBytes >= highWaterMark && !this.#flow.paused) this.#flow.pause()
      return
    }
    if (!sink.write(chunk)) this.#wait(sink)
  }

  /** The body is complete; `trailers`, the answer's trailer fields, when it had any. */
  end(trailers?: Trailers): void {
    if (this.#destroyed || this.#ended || this.#cut) return
    this.#ended = true
    this.#trailers = trailers
    const sink = this.#sink
    if (sink !== undefined) this.#end(sink)
  }

  /** The upstream broke off mid-body: the caller's side is told (once it is attached). */
  cut(): void {
    if (this.#destroyed || this.#ended || this.#cut) return
    this.#cut = true
    this.#held = []
    this.#onCut?.()
  }

  // The caller's side.

  /**
   * Writes the body to `sink` as it arrives, then ends it; `onCut` runs instead of the end when
   * the upstream breaks off mid-body. With `withTrailers` (the caller sent `TE: trailers`), the
   * answer's trailers, without `X-Svc-*` fields, go to the sink before the end. Attaches at most once.
   */
  pipe(sink: RelaySink, onCut: () => void, withTrailers = false): void {
    if (this.#sink !== undefined || this.#destroyed) return
    this.#sink = sink
    this.#onCut = onCut
    this.#withTrailers = withTrailers
    if (this.#cut) {
      onCut()
      return
    }
    const held = this.#held
    this.#held = []
    this.#heldBytes = 0
    let full = false
    for (const chunk of held) if (!sink.write(chunk)) full = true
    if (this.#ended) this.#end(sink)
    else if (full) this.#wait(sink)
    else if (this.#flow.paused) this.#flow.resume()
  }

  /** The caller's side gives the body up (gone, or the answer was discarded); the upstream is aborted if the body had not ended. */
  destroy(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    this.#held = []
    if (!this.#ended && !this.#cut) this.#onDestroy()
  }

  #end(sink: RelaySink): void {
    const trailers = this.#trailers
    if (this.#withTrailers && trailers !== undefined && sink.addTrailers !== undefined) {
      const relayed: Record<string, string | Array<string>> = {}
      let any = false
      for (const name in trailers) {
        const value = trailers[name]
        if (value === undefined || name.toLowerCase().startsWith("x-svc-")) continue
        relayed[name] = typeof value === "string" ? value : [...value]
        any = true
      }
      // A field Node refuses (never expected from undici's parser) is dropped with the others.
      if (any) {
        try {
          sink.addTrailers(relayed)
        } catch {}
      }
    }
    sink.end()
  }

  #wait(sink: RelaySink): void {
    if (!this.#flow.paused) this.#flow.pause()
    if (this.#draining) return
    this.#draining = true
    sink.once("drain", this.#drained)
  }

  readonly #drained = (): void => {
    this.#draining = false
    if (!this.#destroyed && !this.#ended && !this.#cut && this.#flow.paused) this.#flow.resume()
  }
}
