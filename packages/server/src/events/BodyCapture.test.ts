import { assert, describe, it } from "@effect/vitest"
import { BodyCapture, type CapturedBody, captureBuffered, captureSkipped, SkipReason } from "./BodyCapture.ts"

const bytesOf = (text: string) => new TextEncoder().encode(text)

const captured = (body: CapturedBody) => {
  if ("skipped" in body) return assert.fail(`expected bytes, the body was skipped: ${body.skipped}`)
  return { text: new TextDecoder().decode(body.bytes), totalBytes: body.totalBytes, truncated: body.truncated }
}

describe("BodyCapture", () => {
  it("keeps exactly the cap across chunk boundaries and counts every byte", () => {
    const capture = new BodyCapture(10)
    capture.push(bytesOf("abcd"))
    capture.push(bytesOf("efgh"))
    capture.push(bytesOf("ijklmnop"))
    capture.push(bytesOf("qrstuvwxyz"))
    const result = capture.result()
    assert.deepStrictEqual(captured(result), { text: "abcdefghij", totalBytes: 26, truncated: true })
    if ("bytes" in result) assert.strictEqual(result.bytes.byteLength, 10)
  })

  it("a body of exactly the cap is whole, not truncated; one byte more is truncated", () => {
    const exact = new BodyCapture(6)
    exact.push(bytesOf("abc"))
    exact.push(bytesOf("def"))
    assert.deepStrictEqual(captured(exact.result()), { text: "abcdef", totalBytes: 6, truncated: false })
    exact.push(bytesOf("g"))
    assert.deepStrictEqual(captured(exact.result()), { text: "abcdef", totalBytes: 7, truncated: true })
  })

  it("copies what it keeps: reusing the pushed buffer does not change the capture", () => {
    const capture = new BodyCapture(8)
    const chunk = Buffer.from("hello")
    capture.push(chunk)
    chunk.fill(0x21)
    capture.push(Buffer.from("world"))
    assert.deepStrictEqual(captured(capture.result()), { text: "hellowor", totalBytes: 10, truncated: true })
  })

  it("an empty body is empty and whole; a zero cap keeps nothing but still counts", () => {
    assert.deepStrictEqual(captured(new BodyCapture(4).result()), { text: "", totalBytes: 0, truncated: false })
    const none = new BodyCapture(0)
    none.push(bytesOf("abc"))
    assert.deepStrictEqual(captured(none.result()), { text: "", totalBytes: 3, truncated: true })
  })

  it("skip drops what was kept; the first reason wins; later chunks are still counted", () => {
    const capture = new BodyCapture(16)
    capture.push(bytesOf("partial"))
    capture.skip(SkipReason.aborted)
    capture.skip(SkipReason.upgrade)
    capture.push(bytesOf("more"))
    assert.deepStrictEqual(capture.result(), { skipped: "body stream aborted" })
    assert.strictEqual(capture.totalBytes, 11)
  })

  it("result can be taken again after more chunks", () => {
    const capture = new BodyCapture(5)
    capture.push(bytesOf("ab"))
    assert.deepStrictEqual(captured(capture.result()), { text: "ab", totalBytes: 2, truncated: false })
    capture.push(bytesOf("cd"))
    capture.push(bytesOf("ef"))
    assert.deepStrictEqual(captured(capture.result()), { text: "abcde", totalBytes: 6, truncated: true })
  })

  it("refuses a negative or fractional cap", () => {
    assert.throws(() => new BodyCapture(-1), RangeError)
    assert.throws(() => new BodyCapture(1.5), RangeError)
  })

  it("captureBuffered and captureSkipped", () => {
    const source = bytesOf("0123456789")
    assert.deepStrictEqual(captured(captureBuffered(source, 4)), { text: "0123", totalBytes: 10, truncated: true })
    assert.deepStrictEqual(captured(captureBuffered(source, 10)), {
      text: "0123456789",
      totalBytes: 10,
      truncated: false
    })
    const whole = captureBuffered(source, 100)
    source[0] = 0x41
    assert.strictEqual(captured(whole).text, "0123456789")
    assert.deepStrictEqual(captureSkipped("connection upgraded"), { skipped: "connection upgraded" })
  })
})
