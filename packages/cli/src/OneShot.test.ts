import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { findRequestUrls, markOneShot, rewriteArgs, upstreamBases } from "./OneShot.ts"

const urlsOf = (program: string, args: ReadonlyArray<string>) => {
  const result = findRequestUrls(program, args)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const failureOf = (program: string, args: ReadonlyArray<string>) => {
  const result = findRequestUrls(program, args)
  if (Result.isSuccess(result)) throw new Error("unexpected success")
  return result.failure.message
}

describe("markOneShot", () => {
  it("sets the curl of `proxy [flags] curl …` apart with --, skipping flag values", () => {
    assert.deepStrictEqual(markOneShot(["proxy", "--connection", "curl", "curl", "-s", "--port", "1", "https://x"]), [
      "proxy",
      "--connection",
      "curl",
      "--",
      "curl",
      "-s",
      "--port",
      "1",
      "https://x"
    ])
    assert.deepStrictEqual(markOneShot(["--config", "c.yaml", "proxy", "--connection=cxn_1", "/usr/bin/wget", "-q"]), [
      "--config",
      "c.yaml",
      "proxy",
      "--connection=cxn_1",
      "--",
      "/usr/bin/wget",
      "-q"
    ])
  })

  it("leaves other command lines as they are", () => {
    const same = (args: ReadonlyArray<string>) => assert.deepStrictEqual(markOneShot(args), args)
    same(["proxy", "--connection", "cxn_1", "--upstream-base", "https://x"])
    same(["proxy", "--connection", "cxn_1", "--", "curl", "-s"])
    same(["proxy", "--connection", "cxn_1", "httpie", "GET"])
    same(["list", "connections", "curl"])
    same(["--config", "proxy", "list"])
  })
})

describe("findRequestUrls / rewriteArgs", () => {
  it("finds the request URLs, not the values of -H, -e, -x, -d or --referer", () => {
    const args = [
      "-sS",
      "-H",
      "Referer: https://a.example",
      "-e",
      "https://referer.example/",
      "-x",
      "http://proxy.example:3128",
      "-d",
      "https://data.example",
      "--url",
      "https://API.example.com:443/v1/x?y=1#f",
      "http://other.example:8080"
    ]
    const urls = urlsOf("curl", args)
    assert.deepStrictEqual(urls, [
      { index: 10, origin: "https://api.example.com", rest: "/v1/x?y=1#f" },
      { index: 11, origin: "http://other.example:8080", rest: "" }
    ])
    const listeners: Record<string, string> = {
      "https://api.example.com": "http://127.0.0.1:1001",
      "http://other.example:8080": "http://127.0.0.1:1002"
    }
    const rewritten = rewriteArgs(args, urls, (origin) => listeners[origin] ?? "")
    assert.deepStrictEqual(rewritten.slice(9), ["--url", "http://127.0.0.1:1001/v1/x?y=1#f", "http://127.0.0.1:1002"])
    assert.deepStrictEqual(rewritten.slice(0, 9), args.slice(0, 9))
  })

  it("a cluster ending in a value option takes the next argument (-sH)", () => {
    assert.deepStrictEqual(
      urlsOf("curl", ["-sH", "https://not.example", "https://yes.example/p"]).map((url) => url.origin),
      ["https://yes.example"]
    )
  })

  it("keeps curl's globbing and encoded characters byte for byte", () => {
    const [url] = urlsOf("curl", ["https://h.example/files/[1-3].txt?q=%20{a,b}"])
    assert.strictEqual(url?.rest, "/files/[1-3].txt?q=%20{a,b}")
  })

  it("wget: --header and -O values are not request URLs", () => {
    assert.deepStrictEqual(
      urlsOf("wget", ["--header", "X: https://h", "-O", "https://f", "-q", "https://w.example/a"]).map(
        (url) => url.index
      ),
      [5]
    )
  })

  it("fails without a URL, with credentials in one, or with no host", () => {
    assert.match(failureOf("curl", ["-s", "example.com"]), /no http:\/\/ or https:\/\/ URL among the curl arguments/)
    assert.match(failureOf("curl", ["https://user:pw@h.example/"]), /carries credentials/)
    assert.match(failureOf("wget", ["http:///path"]), /cannot read the host/)
  })
})

describe("one-shot with --upstream-base (spec 4.8: flags first)", () => {
  it("the flag stays cli's: -- goes before the command", () => {
    assert.deepStrictEqual(
      markOneShot(["proxy", "--connection", "cxn_1", "--upstream-base", "https://api.example.com/v2", "curl", "-s"]),
      ["proxy", "--connection", "cxn_1", "--upstream-base", "https://api.example.com/v2", "--", "curl", "-s"]
    )
  })

  it("every URL's path goes to the base (one listener); without it each origin is its own base", () => {
    const args = ["-s", "https://one.example/a?x=1", "http://two.example:8080/b"]
    const urls = urlsOf("curl", args)
    const bases = upstreamBases(urls, new URL("https://api.example.com/v2"))
    assert.deepStrictEqual(
      [...bases],
      [
        ["https://one.example", "https://api.example.com/v2"],
        ["http://two.example:8080", "https://api.example.com/v2"]
      ]
    )
    const listeners: Record<string, string> = { "https://api.example.com/v2": "http://127.0.0.1:1001" }
    assert.deepStrictEqual(
      rewriteArgs(args, urls, (origin) => listeners[bases.get(origin) ?? ""] ?? ""),
      ["-s", "http://127.0.0.1:1001/a?x=1", "http://127.0.0.1:1001/b"]
    )
    assert.deepStrictEqual(
      [...upstreamBases(urls, undefined)],
      [
        ["https://one.example", "https://one.example"],
        ["http://two.example:8080", "http://two.example:8080"]
      ]
    )
  })
})
