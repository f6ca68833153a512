import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import * as fc from "fast-check"
import { ConnectorProxy, defaultConnectorProxy, hostAllowed, parseHostPattern } from "./ConnectorProxy.ts"
import { definitionParseOptions } from "./ConnectorDefinition.ts"
import { issueDetails } from "./Errors.ts"

const decode = (input: unknown) => Schema.decodeUnknownExit(ConnectorProxy)(input, definitionParseOptions)

const problems = (input: unknown) => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return []
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? issueDetails(reason.error.issue) : []
}

const allowed = (patterns: ReadonlyArray<string>, url: string) => hostAllowed(patterns, new URL(url))

describe("parseHostPattern", () => {
  it("parses hosts, wildcards, IP literals and ports", () => {
    assert.deepStrictEqual(parseHostPattern("api.example.com"), {
      wildcard: false,
      host: "api.example.com",
      port: undefined
    })
    assert.deepStrictEqual(parseHostPattern("*.example.com:8443"), { wildcard: true, host: "example.com", port: 8443 })
    assert.deepStrictEqual(parseHostPattern("203.0.113.7"), { wildcard: false, host: "203.0.113.7", port: undefined })
    assert.deepStrictEqual(parseHostPattern("[2001:db8::1]:443"), { wildcard: false, host: "[2001:db8::1]", port: 443 })
    assert.deepStrictEqual(parseHostPattern("localhost"), { wildcard: false, host: "localhost", port: undefined })
  })

  it("rejects what is not a plain lower-case host pattern", () => {
    for (const text of [
      "",
      "API.example.com",
      "example.com.",
      "https://example.com",
      "example.com/path",
      "*.com",
      "*example.com",
      "a.*.example.com",
      "*.1.2.3.4",
      "*.[::1]",
      "[2001:0db8::1]",
      "[::1",
      "1.2.3",
      "256.1.1.1",
      "010.0.0.1",
      "example.com:0",
      "example.com:65536",
      "example.com:",
      "exa mple.com",
      "-bad.example.com",
      "bücher.example"
    ]) {
      assert.isString(parseHostPattern(text), text)
    }
  })

  it("never throws on arbitrary text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        const parsed = parseHostPattern(text)
        return (
          typeof parsed === "string" ||
          (parsed.host.length > 0 && (parsed.port === undefined || (parsed.port >= 1 && parsed.port <= 65535)))
        )
      })
    )
  })
})

describe("hostAllowed", () => {
  it("matches exact hosts on the scheme's default port only unless a port is given", () => {
    assert.isTrue(allowed(["api.example.com"], "https://api.example.com/x"))
    assert.isTrue(allowed(["api.example.com"], "https://api.example.com:443/x"))
    assert.isTrue(allowed(["api.example.com"], "http://api.example.com/x"))
    assert.isFalse(allowed(["api.example.com"], "https://api.example.com:8443/x"))
    assert.isTrue(allowed(["api.example.com:8443"], "https://api.example.com:8443/x"))
    assert.isFalse(allowed(["api.example.com:8443"], "https://api.example.com/x"))
    assert.isTrue(allowed(["api.example.com:443"], "https://api.example.com/x"))
    assert.isFalse(allowed(["api.example.com"], "https://api.example.com.evil.example/x"))
    assert.isFalse(allowed(["api.example.com"], "https://evilapi.example.com/x"))
    assert.isFalse(allowed(["api.example.com"], "ftp://api.example.com/x"))
  })

  it("matches wildcards at any depth but never the bare suffix", () => {
    assert.isTrue(allowed(["*.example.com"], "https://a.example.com/"))
    assert.isTrue(allowed(["*.example.com"], "https://a.b.example.com/"))
    assert.isFalse(allowed(["*.example.com"], "https://example.com/"))
    assert.isFalse(allowed(["*.example.com"], "https://badexample.com/"))
    assert.isTrue(allowed(["*.example.com", "example.com"], "https://example.com/"))
  })

  it("a wildcard allows every subdomain and never the suffix itself", () => {
    const label = fc.stringMatching(/^[a-z](?:[a-z0-9-]{0,10}[a-z0-9])?$/)
    fc.assert(
      fc.property(fc.array(label, { minLength: 2, maxLength: 4 }), label, (suffixLabels, sub) => {
        const suffix = suffixLabels.join(".")
        const patterns = [`*.${suffix}`]
        return allowed(patterns, `https://${sub}.${suffix}/`) && !allowed(patterns, `https://${suffix}/`)
      })
    )
  })

  it("compares with the URL parser's normalised host", () => {
    assert.isTrue(allowed(["api.example.com"], "https://API.Example.COM/"))
    assert.isTrue(allowed(["127.0.0.1"], "http://0x7f.0.0.1/"))
    assert.isTrue(allowed(["[::1]:8080"], "http://[0:0::1]:8080/"))
    assert.isFalse(allowed([], "https://api.example.com/"))
  })
})

describe("ConnectorProxy", () => {
  it("materialises every default", () => {
    assert.deepStrictEqual(decode({}), Exit.succeed(defaultConnectorProxy))
    assert.deepStrictEqual(
      decode({ timeouts: { total: "5m" } }),
      Exit.succeed({
        ...defaultConnectorProxy,
        timeouts: { connect: "5s", first_byte: "30s", total: "5m" }
      })
    )
  })

  it("names each bad entry and value", () => {
    assert.deepStrictEqual(problems({ allowed_hosts: ["ok.example.com", "*.com"] }), [
      { field: "allowed_hosts[1]", message: "a wildcard needs a suffix of at least two labels, e.g. *.example.com" }
    ])
    assert.deepStrictEqual(problems({ allowed_hosts: ["ok.example.com", "a.example.com", "ok.example.com"] }), [
      { field: "allowed_hosts[2]", message: "must not repeat a host" }
    ])
    assert.deepStrictEqual(
      problems({ timeouts: { connect: "2m" }, max_concurrent_requests: 0 }).map((p) => p.field),
      ["timeouts.connect", "max_concurrent_requests"]
    )
    assert.deepStrictEqual(problems({ timeouts: { connect: "30s", first_byte: "2m", total: "20s" } }), [
      { field: "timeouts.connect", message: "must not exceed total" },
      { field: "timeouts.first_byte", message: "must not exceed total" }
    ])
    assert.deepStrictEqual(
      problems({ timeouts: { total: "0s" } }).map((p) => p.field),
      ["timeouts.total"]
    )
  })
})
