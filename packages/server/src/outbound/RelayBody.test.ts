import { describe, expect, it } from "@effect/vitest"
import { highWaterMark, RelayBody, type RelaySink, type UpstreamFlow } from "./RelayBody.ts"

/** An upstream controller that records what the relay asked of it. */
class Flow implements UpstreamFlow {
  paused = false
  readonly calls: Array<string> = []
  pause() {
    this.paused = true
    this.calls.push("pause")
  }
  resume() {
    this.paused = false
    this.calls.push("resume")
  }
}

/** A response whose buffer takes `room` chunks before `write` answers false. */
class Sink implements RelaySink {
  readonly written: Array<string> = []
  ended = false
  drainListeners: Array<() => void> = []
  room: number
  constructor(room: number) {
    this.room = room
  }
  write(chunk: Uint8Array) {
    this.written.push(Buffer.from(chunk).toString())
    this.room -= 1
    return this.room > 0
  }
  end() {
    this.ended = true
  }
  once(_event: "drain", listener: () => void) {
    this.drainListeners.push(listener)
  }
  drain(room: number) {
    this.room = room
    const listeners = this.drainListeners
    this.drainListeners = []
    for (const listener of listeners) listener()
  }
}

const chunk = (text: string) => Buffer.from(text)

describe("RelayBody", () => {
  it("writes chunks held before the response was attached, then the rest as they arrive, then ends", () => {
    const flow = new Flow()
    const body = new RelayBody(flow, () => expect.fail("not destroyed"))
    body.push(chunk("a"))
    body.push(chunk("b"))
    const sink = new Sink(100)
    body.pipe(sink, () => expect.fail("not cut"))
    expect(sink.written).toEqual(["a", "b"])
    body.push(chunk("c"))
    expect(sink.ended).toBe(false)
    body.end()
    expect(sink.written).toEqual(["a", "b", "c"])
    expect(sink.ended).toBe(true)
    expect(flow.calls).toEqual([])
  })

  it("ends the response at once when the body ended before it was attached", () => {
    const body = new RelayBody(new Flow(), () => expect.fail("not destroyed"))
    body.push(chunk("whole"))
    body.end()
    const sink = new Sink(100)
    body.pipe(sink, () => expect.fail("not cut"))
    expect(sink.written).toEqual(["whole"])
    expect(sink.ended).toBe(true)
  })

  it("pauses the upstream while the response is full and resumes it once the response drained", () => {
    const flow = new Flow()
    const body = new RelayBody(flow, () => {})
    const sink = new Sink(2)
    body.pipe(sink, () => {})
    body.push(chunk("1"))
    expect(flow.paused).toBe(false)
    body.push(chunk("2"))
    expect(flow.paused).toBe(true)
    // A chunk already on its way while paused is still written, and waits for the same drain.
    body.push(chunk("3"))
    expect(sink.drainListeners).toHaveLength(1)
    sink.drain(10)
    expect(flow.paused).toBe(false)
    expect(flow.calls).toEqual(["pause", "resume"])
    expect(sink.written).toEqual(["1", "2", "3"])
  })

  it("pauses the upstream once a high-water mark is held before the response is attached, and resumes it on attach", () => {
    const flow = new Flow()
    const body = new RelayBody(flow, () => {})
    body.push(new Uint8Array(highWaterMark - 1))
    expect(flow.paused).toBe(false)
    body.push(new Uint8Array(1))
    expect(flow.paused).toBe(true)
    const sink = new Sink(100)
    body.pipe(sink, () => {})
    expect(sink.written).toHaveLength(2)
    expect(flow.paused).toBe(false)
  })

  it("stays paused on attach when the held chunks filled the response", () => {
    const flow = new Flow()
    const body = new RelayBody(flow, () => {})
    body.push(new Uint8Array(highWaterMark))
    const sink = new Sink(1)
    body.pipe(sink, () => {})
    expect(flow.paused).toBe(true)
    sink.drain(10)
    expect(flow.paused).toBe(false)
  })

  it("tells the caller's side when the upstream broke off, before or after it attached, and never ends the response", () => {
    for (const attachFirst of [true, false]) {
      const body = new RelayBody(new Flow(), () => expect.fail("a cut body is not aborted again"))
      const sink = new Sink(100)
      let cuts = 0
      if (attachFirst) body.pipe(sink, () => cuts++)
      body.push(chunk("part"))
      body.cut()
      body.end()
      if (!attachFirst) body.pipe(sink, () => cuts++)
      body.destroy()
      expect(cuts).toBe(1)
      expect(sink.ended).toBe(false)
      expect(sink.written).toEqual(attachFirst ? ["part"] : [])
    }
  })

  it("aborts the upstream when the caller's side gives up a body that had not ended, once", () => {
    let aborts = 0
    const body = new RelayBody(new Flow(), () => aborts++)
    const sink = new Sink(100)
    body.pipe(sink, () => {})
    body.push(chunk("a"))
    body.destroy()
    body.destroy()
    body.push(chunk("b"))
    body.end()
    expect(aborts).toBe(1)
    expect(body.destroyed).toBe(true)
    expect(sink.written).toEqual(["a"])
    expect(sink.ended).toBe(false)
  })

  it("does not abort an upstream whose body already ended, and does not resume it after a late drain", () => {
    const flow = new Flow()
    const body = new RelayBody(flow, () => expect.fail("an ended body is not aborted"))
    const sink = new Sink(1)
    body.pipe(sink, () => {})
    body.push(chunk("a"))
    body.end()
    body.destroy()
    sink.drain(10)
    expect(flow.calls).toEqual(["pause"])
  })
})
