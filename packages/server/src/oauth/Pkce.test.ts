/** PKCE and random tokens: the RFC 7636 Appendix B vector, lengths and alphabet. */
import { assert, describe, it } from "@effect/vitest"
import { makePkce, pkceChallenge, randomToken } from "./Pkce.ts"

const base64url = /^[A-Za-z0-9_-]+$/

describe("Pkce", () => {
  it("computes the RFC 7636 Appendix B vector", () => {
    // The 32 octets of Appendix B encode to its verifier, whose S256 challenge is given there.
    const octets = [
      116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77, 105, 214, 191, 240,
      91, 88, 5, 88, 83, 132, 141, 121
    ]
    const verifier = Buffer.from(octets).toString("base64url")
    assert.strictEqual(verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    assert.strictEqual(pkceChallenge(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
  })

  it("makes a 43-character verifier whose challenge matches, fresh each time", () => {
    const pkce = makePkce()
    assert.strictEqual(pkce.verifier.length, 43)
    assert.match(pkce.verifier, base64url)
    assert.strictEqual(pkce.challenge, pkceChallenge(pkce.verifier))
    assert.strictEqual(pkce.challenge.length, 43)
    assert.notStrictEqual(makePkce().verifier, pkce.verifier)
  })

  it("makes base64url tokens of the requested size", () => {
    assert.strictEqual(randomToken().length, 43)
    assert.strictEqual(Buffer.from(randomToken(16), "base64url").length, 16)
    assert.match(randomToken(64), base64url)
    assert.notStrictEqual(randomToken(), randomToken())
  })
})
