import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import type { ActorIdentity } from "@svc/domain/http/Security"
import { loadConfig } from "../config/ConfigLoader.ts"
import { type ResolvedConfig, SvcConfig } from "../config/SvcConfig.ts"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { Authenticator } from "../auth/Authenticator.ts"
import { BrowserSessions } from "../auth/BrowserSessions.ts"
import { NonceStore } from "../stores/NonceStore.ts"
import { TokenVerifier } from "../auth/TokenVerifier.ts"
import { clearCookie, htmlPage, isSecureBaseUrl, sessionCookie, xsrfCookie } from "./BrowserPages.ts"
import { isAllowedReturnUrl, resolveReturnUrl } from "../auth/ReturnUrls.ts"
import { layerErrorHandling } from "./ErrorHandling.ts"
import { MarketplaceRoutes } from "./MarketplaceRoutes.ts"

const now = 1_750_000_000
const ttlMs = 8 * 60 * 60 * 1000
const rsa = await generateKeyPair("RS256", { extractable: true })
const publicKeyPem = await exportSPKI(rsa.publicKey)
let nonceCounter = 0

const sign = (overrides: JWTPayload = {}, omit: ReadonlyArray<string> = []) => {
  const claims: JWTPayload = { sub: "admin", aud: ["public"], iat: now, exp: now + 300, nonce: `n-${++nonceCounter}` }
  for (const key of omit) delete claims[key]
  return Effect.promise(() =>
    new SignJWT({ ...claims, ...overrides }).setProtectedHeader({ alg: "RS256", typ: "JWT" }).sign(rsa.privateKey)
  )
}

const admin: ActorIdentity = {
  id: "act_admin",
  externalId: "admin",
  namespace: "root",
  name: "admin",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }]
}
const FakeDirectory = Layer.succeed(ActorDirectory)({
  findByExternalId: (externalId) => Effect.succeed(externalId === "admin" ? Option.some(admin) : Option.none()),
  invalidate: () => Effect.void,
  onInvalidate: () => {}
})

const publicBase = "http://127.0.0.1:8080"
const initiate = "https://host.example/start-session?app=svc"

const configLayer = (adjust: (config: ResolvedConfig) => ResolvedConfig) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const dir = yield* Effect.acquireRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-marketplace-"))),
        (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
      )
      const loaded = yield* Effect.orDie(loadConfig({ cwd: dir, env: {} }))
      return Layer.succeed(SvcConfig, adjust(loaded))
    })
  )

const standard = configLayer((c) => ({
  ...c,
  hostApplication: {
    initiate_session_url: initiate,
    allowed_origins: ["https://app.example/", "http://localhost:3000"]
  },
  publicService: { baseUrl: publicBase, sessionTtlMs: ttlMs }
}))

const deps = (config: Layer.Layer<SvcConfig>) =>
  Layer.mergeAll(
    Authenticator.layerNoDeps.pipe(
      Layer.provide(TokenVerifier.layerNoDeps({ algorithm: "RS256", publicKeyPem })),
      Layer.provide(NonceStore.layerMemory)
    ),
    BrowserSessions.layerMemory,
    config
  ).pipe(Layer.provideMerge(FakeDirectory), Layer.orDie)

const app = Layer.mergeAll(MarketplaceRoutes, layerErrorHandling())

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly cookies: ReadonlyArray<string>
  readonly body: string
}

/** One request through the routes in the test fiber (its TestClock included). */
const call = (method: "GET" | "POST", target: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const http = yield* HttpRouter.toHttpEffect(app)
    const request = new Request(`http://127.0.0.1${target}`, { method, headers })
    const response = yield* http.pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(request))
    )
    const web = HttpServerResponse.toWeb(response)
    const body = yield* Effect.promise(() => web.text())
    const answer: Answer = { status: web.status, headers: web.headers, cookies: web.headers.getSetCookie(), body }
    return answer
  }).pipe(Effect.scoped)

const loginUrl = (token: string, returnTo?: string) =>
  `/marketplace/login?token=${encodeURIComponent(token)}${returnTo === undefined ? "" : `&return_to=${encodeURIComponent(returnTo)}`}`

const cookieValue = (answer: Answer, name: string) => {
  const line = answer.cookies.find((c) => c.startsWith(`${name}=`))
  return line?.slice(name.length + 1).split(";")[0]
}

/** Logs of the test, as JSON lines, to prove the token never reaches them. */
const logs: Array<string> = []
const captureLogs = Logger.layer([Logger.make((options) => logs.push(Logger.formatJson.log(options)))])

const run = <A, E>(effect: Effect.Effect<A, E, SvcConfig | Authenticator | BrowserSessions | ActorDirectory>) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(now * 1000)
    logs.length = 0
    return yield* effect
  }).pipe(Effect.provide(deps(standard)), Effect.provide(captureLogs))

const assertNoToken = (answer: Answer, token: string) => {
  assert.notInclude(answer.body, token)
  for (const [, value] of answer.headers) assert.notInclude(value, token)
  for (const line of logs) assert.notInclude(line, token)
}

describe("MarketplaceRoutes", () => {
  it.effect("login sets the HttpOnly session cookie and the XSRF cookie, then 303 to an allowed return_to", () =>
    run(
      Effect.gen(function* () {
        const token = yield* sign()
        const answer = yield* call("GET", loginUrl(token, "https://app.example/after?x=1"))
        assert.strictEqual(answer.status, 303)
        assert.strictEqual(answer.headers.get("location"), "https://app.example/after?x=1")
        assert.strictEqual(answer.headers.get("cache-control"), "no-store")
        assert.strictEqual(answer.headers.get("referrer-policy"), "no-referrer")
        const session = cookieValue(answer, "svc_session")
        const xsrf = cookieValue(answer, "XSRF-TOKEN")
        assert.match(session ?? "", /^[A-Za-z0-9_-]{43}$/)
        assert.match(xsrf ?? "", /^[A-Za-z0-9_-]{43}$/)
        assert.deepStrictEqual(answer.cookies.toSorted(), [
          `XSRF-TOKEN=${xsrf}; Max-Age=28800; Path=/; SameSite=Lax`,
          `svc_session=${session}; Max-Age=28800; Path=/; HttpOnly; SameSite=Lax`
        ])
        assertNoToken(answer, token)

        const described = yield* call("GET", "/marketplace/session", { cookie: `svc_session=${session}` })
        assert.strictEqual(described.status, 200)
        assert.strictEqual(described.headers.get("cache-control"), "no-store")
        assert.deepStrictEqual(JSON.parse(described.body), {
          actorId: "act_admin",
          externalId: "admin",
          expiresAt: new Date(now * 1000 + ttlMs).toISOString()
        })
      })
    )
  )

  it.effect("login without return_to answers a Signed in page; a path return_to stays on the public origin", () =>
    run(
      Effect.gen(function* () {
        const page = yield* call("GET", loginUrl(yield* sign()))
        assert.strictEqual(page.status, 200)
        assert.include(page.body, "Signed in")
        assert.strictEqual(page.headers.get("content-security-policy")?.startsWith("default-src 'none'"), true)
        assert.strictEqual(page.headers.get("x-frame-options"), "DENY")
        assert.strictEqual(page.cookies.length, 2)
        const path = yield* call("GET", loginUrl(yield* sign(), "/marketplace/home"))
        assert.strictEqual(path.status, 303)
        assert.strictEqual(path.headers.get("location"), `${publicBase}/marketplace/home`)
      })
    )
  )

  it.effect("a disallowed return_to is a 400 page, creates no session and leaves the link unused", () =>
    run(
      Effect.gen(function* () {
        const token = yield* sign()
        for (const target of [
          "https://evil.example/",
          "javascript:alert(1)",
          "//evil.example/x",
          "/\\evil.example",
          "https://app.example.evil.example/",
          "https://user@app.example/",
          "http://app.example/",
          "data:text/html,hi"
        ]) {
          const answer = yield* call("GET", loginUrl(token, target))
          assert.strictEqual(answer.status, 400, target)
          assert.deepStrictEqual(answer.cookies, [], target)
          assert.strictEqual(answer.headers.get("location"), null, target)
          assertNoToken(answer, token)
        }
        assert.strictEqual((yield* call("GET", loginUrl(token, "http://localhost:3000/ok"))).status, 303)
      })
    )
  )

  it.effect(
    "a refused login bound for the Connect UI lands on its in-frame error page with a code, and makes no session",
    () =>
      run(
        Effect.gen(function* () {
          const connect = (hostOrigin?: string) =>
            `${publicBase}/connect/${hostOrigin === undefined ? "" : `?host_origin=${encodeURIComponent(hostOrigin)}`}`
          const errorPage = (answer: Answer) => {
            assert.strictEqual(answer.status, 303)
            assert.deepStrictEqual(answer.cookies, [])
            const location = new URL(answer.headers.get("location") ?? "")
            assert.strictEqual(location.origin + location.pathname, `${publicBase}/connect/error`)
            return location.searchParams
          }
          const expired = yield* sign({ exp: now - 3600 })
          const expiredPage = errorPage(yield* call("GET", loginUrl(expired, connect("https://app.example"))))
          assert.strictEqual(expiredPage.get("code"), "link_expired")
          assert.strictEqual(expiredPage.get("host_origin"), "https://app.example")
          assertNoToken(yield* call("GET", loginUrl(expired, connect())), expired)
          assert.strictEqual(
            errorPage(yield* call("GET", loginUrl(yield* sign({ sub: "nobody" }), connect()))).get("code"),
            "unknown_actor"
          )
          const used = yield* sign()
          assert.strictEqual((yield* call("GET", loginUrl(used, connect()))).status, 303)
          assert.strictEqual(errorPage(yield* call("GET", loginUrl(used, connect()))).get("code"), "link_invalid")
          // An origin that is not allowed, named by host_origin or by the framing page: the token stays unused.
          const fresh = yield* sign()
          const foreign = errorPage(yield* call("GET", loginUrl(fresh, connect("https://other.example"))))
          assert.strictEqual(foreign.get("code"), "origin_not_allowed")
          assert.strictEqual(foreign.get("host_origin"), "https://other.example")
          const framed = errorPage(
            yield* call("GET", loginUrl(fresh, connect()), {
              "sec-fetch-dest": "iframe",
              referer: "https://framer.example/page"
            })
          )
          assert.strictEqual(framed.get("code"), "origin_not_allowed")
          assert.strictEqual(framed.get("host_origin"), "https://framer.example")
          const accepted = yield* call("GET", loginUrl(fresh, connect("https://app.example")), {
            "sec-fetch-dest": "iframe",
            referer: "https://app.example/page"
          })
          assert.strictEqual(accepted.status, 303)
          assert.strictEqual(accepted.headers.get("location"), connect("https://app.example"))
          assert.isTrue((cookieValue(accepted, "svc_session") ?? "").length > 0)
          // Framed without a Referer: first the frame check page (no session, the token unused),
          // then the origin it reports decides; an origin the browser cannot tell is origin_unknown.
          const unframed = yield* sign()
          const framedAs = (reported: string, hostOrigin?: string) =>
            call("GET", `${loginUrl(unframed, connect(hostOrigin))}&frame_origin=${encodeURIComponent(reported)}`, {
              "sec-fetch-dest": "iframe"
            })
          const check = yield* call("GET", loginUrl(unframed, connect("https://app.example")), {
            "sec-fetch-dest": "iframe"
          })
          assert.deepStrictEqual(check.cookies, [])
          assert.strictEqual(check.headers.get("cache-control"), "no-store")
          assert.notStrictEqual(check.status, 303)
          assert.isFalse(check.body.includes(unframed))
          const reportedForeign = errorPage(yield* framedAs("https://framer.example", "https://app.example"))
          assert.strictEqual(reportedForeign.get("code"), "origin_not_allowed")
          assert.strictEqual(reportedForeign.get("host_origin"), "https://framer.example")
          const unknown = errorPage(yield* framedAs(""))
          assert.strictEqual(unknown.get("code"), "origin_unknown")
          assert.isNull(unknown.get("host_origin"))
          const reportedAllowed = yield* framedAs("https://app.example")
          assert.strictEqual(reportedAllowed.status, 303)
          assert.strictEqual(reportedAllowed.headers.get("location"), connect())
          // A login bound elsewhere keeps the plain refusal page.
          assert.strictEqual((yield* call("GET", loginUrl(expired, "https://app.example/back"))).status, 401)
        })
      )
  )

  it.effect("a replayed token, a token for aud api, and non-login tokens are refused with 401", () =>
    run(
      Effect.gen(function* () {
        const token = yield* sign()
        assert.strictEqual((yield* call("GET", loginUrl(token))).status, 200)
        const refusals = [
          token,
          yield* sign({ aud: ["api"] }),
          yield* sign({}, ["exp", "nonce"]),
          yield* sign({}, ["nonce"]),
          yield* sign({ exp: now + 20 * 60 }),
          yield* sign({ iat: now - 30 * 60, exp: now + 60 }),
          yield* sign({ exp: now - 3600 }),
          yield* sign({ sub: "nobody" }),
          "not-a-jwt"
        ]
        for (const refused of refusals) {
          const answer = yield* call("GET", loginUrl(refused))
          assert.strictEqual(answer.status, 401)
          assert.deepStrictEqual(answer.cookies, [])
          assert.include(answer.body, "Sign-in link not accepted")
          assertNoToken(answer, refused)
        }
        assert.isTrue(logs.some((line) => line.includes("marketplace login refused")))
        assert.isTrue(logs.some((line) => line.includes("nonce_replayed") || line.includes("invalid_token")))
        assert.isTrue(logs.some((line) => line.includes("login_token_too_long")))
      })
    )
  )

  it.effect("no token → 302 to initiate_session_url, with return_to only when allowed", () =>
    run(
      Effect.gen(function* () {
        const plain = yield* call("GET", "/marketplace/login")
        assert.strictEqual(plain.status, 302)
        assert.strictEqual(plain.headers.get("location"), initiate)
        const withReturn = yield* call("GET", "/marketplace/login?return_to=https%3A%2F%2Fapp.example%2Fback")
        assert.strictEqual(
          withReturn.headers.get("location"),
          `${initiate}&return_to=${encodeURIComponent("https://app.example/back")}`
        )
        const foreign = yield* call("GET", "/marketplace/login?return_to=https%3A%2F%2Fevil.example%2F")
        assert.strictEqual(foreign.headers.get("location"), initiate)
      })
    )
  )

  it.effect("no token and no initiate_session_url → 401 page", () =>
    Effect.gen(function* () {
      const answer = yield* call("GET", "/marketplace/login")
      assert.strictEqual(answer.status, 401)
      assert.include(answer.body, "Sign-in required")
    }).pipe(Effect.provide(deps(configLayer((c) => ({ ...c, hostApplication: {} })))))
  )

  it.effect("cookies are Secure when the public base URL is https", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now * 1000)
      const answer = yield* call("GET", loginUrl(yield* sign()))
      assert.strictEqual(answer.cookies.length, 2)
      for (const line of answer.cookies) assert.include(line, "; Secure")
    }).pipe(
      Effect.provide(
        deps(configLayer((c) => ({ ...c, publicService: { baseUrl: "https://market.example", sessionTtlMs: ttlMs } })))
      )
    )
  )

  it.effect("logout needs the cookie and the XSRF header, revokes the session and clears both cookies", () =>
    run(
      Effect.gen(function* () {
        const login = yield* call("GET", loginUrl(yield* sign()))
        const session = cookieValue(login, "svc_session")
        const xsrf = cookieValue(login, "XSRF-TOKEN") ?? ""
        const cookie = `svc_session=${session}; XSRF-TOKEN=${xsrf}`
        const none = yield* call("POST", "/marketplace/logout")
        assert.deepStrictEqual([none.status, JSON.parse(none.body).code], [401, "session_required"])
        const noHeader = yield* call("POST", "/marketplace/logout", { cookie })
        assert.deepStrictEqual([noHeader.status, JSON.parse(noHeader.body).code], [403, "xsrf_token_invalid"])
        const out = yield* call("POST", "/marketplace/logout", { cookie, "x-xsrf-token": xsrf })
        assert.strictEqual(out.status, 204)
        assert.strictEqual(out.headers.get("cache-control"), "no-store")
        assert.deepStrictEqual(out.cookies.toSorted(), [
          "XSRF-TOKEN=; Max-Age=0; Path=/; SameSite=Lax",
          "svc_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax"
        ])
        const after = yield* call("GET", "/marketplace/session", { cookie })
        assert.strictEqual(after.status, 401)
      })
    )
  )

  it.effect("session without a cookie → 401 with the standard JSON body", () =>
    run(
      Effect.gen(function* () {
        const answer = yield* call("GET", "/marketplace/session")
        assert.strictEqual(answer.status, 401)
        assert.deepStrictEqual(JSON.parse(answer.body), {
          error: "a browser session or a bearer token is required",
          code: "session_required"
        })
      })
    )
  )
})

describe("BrowserPages", () => {
  const policy = {
    hostApplication: {
      allowed_origins: ["https://app.example/", "HTTP://Localhost:3000", "not a url", "ftp://x.example"]
    },
    publicService: { baseUrl: "https://market.example:8443/base" }
  }

  it("isAllowedReturnUrl: exact normalised origins of allowed_origins and the public base only", () => {
    const table: ReadonlyArray<readonly [string, boolean]> = [
      ["https://app.example/", true],
      ["https://app.example", true],
      ["https://APP.example:443/a?b=c#d", true],
      ["http://localhost:3000/x", true],
      ["https://market.example:8443/anything", true],
      ["https://market.example/", false],
      ["http://app.example/", false],
      ["https://app.example:444/", false],
      ["https://app.example.evil.example/", false],
      ["https://evil.example/?https://app.example/", false],
      ["https://user:pw@app.example/", false],
      ["https://user@app.example/", false],
      ["//app.example/", false],
      ["/relative", false],
      ["relative", false],
      ["javascript:alert(1)", false],
      ["JAVASCRIPT://app.example/%0aalert(1)", false],
      ["data:text/html,x", false],
      ["ftp://x.example/", false],
      ["https://app.example/\r\nSet-Cookie: x=1", false],
      ["https://app.example\\@evil.example/", false],
      [" https://app.example/", false],
      ["", false]
    ]
    for (const [url, expected] of table) assert.strictEqual(isAllowedReturnUrl(url, policy), expected, url)
  })

  it("resolveReturnUrl resolves an absolute path on the public origin only", () => {
    assert.strictEqual(resolveReturnUrl("/home?a=1", policy), "https://market.example:8443/home?a=1")
    assert.strictEqual(resolveReturnUrl("//evil.example/", policy), undefined)
    assert.strictEqual(resolveReturnUrl("/\\evil.example/", policy), undefined)
    assert.strictEqual(resolveReturnUrl("https://app.example/x", policy), "https://app.example/x")
  })

  it("request cookies (effect's Cookies.parseHeader): first occurrence wins, quotes removed, no prototype keys", () => {
    const cookiesOf = (header?: string) =>
      HttpServerRequest.fromWeb(
        new Request("http://svc.test/", header === undefined ? {} : { headers: { cookie: header } })
      ).cookies
    const cookies = cookiesOf(' a=1; b="two" ; a=3; __proto__=x; broken; c=')
    assert.deepStrictEqual(Object.entries(cookies), [
      ["a", "1"],
      ["b", "two"],
      ["__proto__", "x"],
      ["c", ""]
    ])
    assert.strictEqual(Object.getPrototypeOf(cookies), Object.prototype)
    assert.strictEqual(({} as Record<string, unknown>).x, undefined)
    assert.deepStrictEqual(Object.keys(cookiesOf(undefined)), [])
  })

  it("cookie strings: the session cookie is HttpOnly, the XSRF cookie is not; clearing sets Max-Age=0", () => {
    assert.strictEqual(
      sessionCookie("abc", 60, true),
      "svc_session=abc; Max-Age=60; Path=/; HttpOnly; Secure; SameSite=Lax"
    )
    assert.strictEqual(xsrfCookie("def", 60, false), "XSRF-TOKEN=def; Max-Age=60; Path=/; SameSite=Lax")
    assert.strictEqual(
      clearCookie("svc_session", { httpOnly: true, secure: true }),
      "svc_session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax"
    )
    assert.throws(() => sessionCookie("a;b", 60, true))
    assert.isTrue(isSecureBaseUrl("https://x.example"))
    assert.isFalse(isSecureBaseUrl("http://x.example"))
  })

  it("htmlPage escapes its text and sets the browser security headers", () => {
    const web = HttpServerResponse.toWeb(htmlPage(400, "<b>t</b>", `a "quoted" & 'x' <script>`))
    assert.strictEqual(web.status, 400)
    assert.strictEqual(web.headers.get("content-type"), "text/html; charset=utf-8")
    assert.strictEqual(web.headers.get("cache-control"), "no-store")
    assert.strictEqual(web.headers.get("x-frame-options"), "DENY")
    assert.strictEqual(web.headers.get("referrer-policy"), "no-referrer")
    assert.match(web.headers.get("content-security-policy") ?? "", /^default-src 'none'/)
    return web.text().then((body) => {
      assert.include(body, "&lt;b&gt;t&lt;/b&gt;")
      assert.include(body, "a &quot;quoted&quot; &amp; &#39;x&#39; &lt;script&gt;")
      assert.notInclude(body, "<script>")
    })
  })
})
