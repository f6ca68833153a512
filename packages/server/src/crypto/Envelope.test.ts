import { assert, describe, it } from "@effect/vitest"
import * as Envelope from "./Envelope.ts"

const context: Envelope.CipherContext = {
  table: "connections",
  column: "credentials",
  rowId: "cxn_aaaaaaaaaaaaaaaaaaaaaaaaaa",
  namespace: "root.acme"
}
const ref: Envelope.KeyRef = { keyId: "key_bbbbbbbbbbbbbbbbbbbbbbbbbb", version: 3 }
const value = { token: "s3cr3t-token", nested: { n: 1, list: [true, null, "ü"] } }

/** Flips one bit of the byte at `index` of the base64url segment `segment` (3: nonce, 4: body). */
const tamper = (ciphertext: string, segment: 3 | 4, index: number): string => {
  const parts = ciphertext.split(".")
  const bytes = Buffer.from(parts[segment]!, "base64url")
  bytes[index] = (bytes[index] ?? 0) ^ 0x01
  parts[segment] = bytes.toString("base64url")
  return parts.join(".")
}

describe("Envelope", () => {
  it("round-trips a JSON value and names the key in a v1 header", () => {
    const key = Envelope.generateKey()
    const ciphertext = Envelope.encrypt(key, ref, context, value)
    assert.match(ciphertext, /^v1\.key_b{26}\.3\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
    assert.isFalse(ciphertext.includes("s3cr3t"))
    assert.deepStrictEqual(Envelope.headerOf(ciphertext), ref)
    assert.deepStrictEqual(Envelope.decrypt(key, context, ciphertext), { ok: true, value })
    assert.deepStrictEqual(Envelope.decrypt(key, context, Envelope.encrypt(key, ref, context, "x")), {
      ok: true,
      value: "x"
    })
  })

  it("binds the ciphertext to table, column, row id, namespace, key id and version", () => {
    const key = Envelope.generateKey()
    const ciphertext = Envelope.encrypt(key, ref, context, value)
    const elsewhere: ReadonlyArray<Envelope.CipherContext> = [
      { ...context, table: "actors" },
      { ...context, column: "configuration" },
      { ...context, rowId: "cxn_cccccccccccccccccccccccccc" },
      { ...context, namespace: "root.other" },
      { ...context, namespace: "root.acme.team" }
    ]
    for (const other of elsewhere) {
      assert.deepStrictEqual(
        Envelope.decrypt(key, other, ciphertext),
        { ok: false, problem: "authentication failed" },
        JSON.stringify(other)
      )
    }
    const parts = ciphertext.split(".")
    const relabelled = [parts[0], parts[1], "4", parts[3], parts[4]].join(".")
    assert.deepStrictEqual(Envelope.decrypt(key, context, relabelled), { ok: false, problem: "authentication failed" })
  })

  it("refuses a tampered nonce, body or tag", () => {
    const key = Envelope.generateKey()
    const ciphertext = Envelope.encrypt(key, ref, context, value)
    const bodyLength = Buffer.from(ciphertext.split(".")[4]!, "base64url").length
    for (const [segment, index] of [
      [3, 0],
      [4, 0],
      [4, bodyLength - 1],
      [4, bodyLength - 17]
    ] as const) {
      assert.deepStrictEqual(Envelope.decrypt(key, context, tamper(ciphertext, segment, index)), {
        ok: false,
        problem: "authentication failed"
      })
    }
    assert.deepStrictEqual(Envelope.decrypt(key, context, ciphertext.slice(0, -4)), {
      ok: false,
      problem: "authentication failed"
    })
    for (const malformed of ["", "v2.key_x.1.AA.AA", "v1.key_x.0.AA.AA", "v1.key.x.1.AA.AA", '{"token":1}']) {
      assert.deepStrictEqual(Envelope.decrypt(key, context, malformed), { ok: false, problem: "malformed" }, malformed)
    }
  })

  it("refuses another data key", () => {
    const ciphertext = Envelope.encrypt(Envelope.generateKey(), ref, context, value)
    assert.deepStrictEqual(Envelope.decrypt(Envelope.generateKey(), context, ciphertext), {
      ok: false,
      problem: "authentication failed"
    })
  })

  it("uses a fresh nonce for every encryption", () => {
    const key = Envelope.generateKey()
    const nonces = new Set<string>()
    const ciphertexts = new Set<string>()
    for (let i = 0; i < 5000; i++) {
      const ciphertext = Envelope.encrypt(key, ref, context, value)
      nonces.add(ciphertext.split(".")[3]!)
      ciphertexts.add(ciphertext)
    }
    assert.strictEqual(nonces.size, 5000)
    assert.strictEqual(ciphertexts.size, 5000)
  })

  it("wraps data keys under the root key, bound to key id and version", () => {
    const root = Envelope.generateKey()
    const dataKey = Envelope.generateKey()
    const wrapped = Envelope.wrapDataKey(root, ref, dataKey)
    assert.isFalse(Buffer.from(wrapped, "base64").includes(Buffer.from(dataKey)))
    assert.deepStrictEqual(Envelope.unwrapDataKey(root, ref, wrapped), dataKey)
    assert.isUndefined(Envelope.unwrapDataKey(Envelope.generateKey(), ref, wrapped))
    assert.isUndefined(Envelope.unwrapDataKey(root, { ...ref, version: 4 }, wrapped))
    assert.isUndefined(Envelope.unwrapDataKey(root, { ...ref, keyId: "root" }, wrapped))
    assert.isUndefined(Envelope.unwrapDataKey(root, ref, "AAAA"))
  })

  it("derives a 16-hex-char root key id that differs between keys", () => {
    const root = Envelope.generateKey()
    assert.match(Envelope.rootKeyId(root), /^[0-9a-f]{16}$/)
    assert.strictEqual(Envelope.rootKeyId(root), Envelope.rootKeyId(new Uint8Array(root)))
    assert.notStrictEqual(Envelope.rootKeyId(root), Envelope.rootKeyId(Envelope.generateKey()))
  })

  it("refuses context parts that would make the authenticated data ambiguous", () => {
    const key = Envelope.generateKey()
    assert.throws(() => Envelope.encrypt(key, ref, { ...context, rowId: "a|b" }, value))
    assert.throws(() => Envelope.encrypt(key, { keyId: "key.x", version: 1 }, context, value))
  })
})
