/**
 * `cli login-redirect` on ephemeral loopback ports: the listener in process, the command in
 * process (`--port 0` prints the real port) and `bin/cli` as a child process stopped by SIGTERM.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, FileSystem, Layer, Option, Schedule } from "effect"
import { TestConsole } from "effect/testing"
import { jwtVerify } from "jose"
import { spawn } from "node:child_process"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as NodePath from "node:path"
import { runCli } from "../Cli.ts"
import { ConfigLocation } from "../CliConfig.ts"
import { loginRedirectResponse, makeLoginUrlSigner } from "../MarketplaceLogin.ts"
import { serveHttp } from "./LoginRedirect.ts"

const secret = new TextEncoder().encode("0123456789abcdef0123456789abcdef-redirect\n")
const bin = NodePath.resolve(import.meta.dirname, "../../bin/cli")
const listening = /^login-redirect listening on (http:\/\/127\.0\.0\.1:(\d+))$/m

/** Runs `f` with a temporary home holding an HS256 secret file, real files and a test console. */
const withSecret = <A, E, R>(f: (home: string, secretPath: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const home = yield* fs.makeTempDirectoryScoped()
    const secretPath = NodePath.join(home, "shared.key")
    yield* fs.writeFile(secretPath, secret)
    return yield* f(home, secretPath).pipe(Effect.provide(ConfigLocation.layer(home)))
  }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, TestConsole.layer)))

const request = (url: string, method = "GET") =>
  Effect.promise(() => fetch(url, { method, redirect: "manual", signal: AbortSignal.timeout(10_000) }))

/** Follows nothing: checks a 302 to the login endpoint and returns its verified claims and return_to. */
const redirected = (url: string, loginUrl: string) =>
  Effect.gen(function* () {
    const response = yield* request(url)
    assert.strictEqual(response.status, 302)
    assert.strictEqual(response.headers.get("cache-control"), "no-store")
    const location = new URL(response.headers.get("location") ?? "")
    assert.strictEqual(`${location.origin}${location.pathname}`, loginUrl)
    const { payload } = yield* Effect.promise(() =>
      jwtVerify(location.searchParams.get("token") ?? "", secret, { algorithms: ["HS256"], audience: "public" })
    )
    assert.strictEqual((payload.exp ?? 0) - (payload.iat ?? 0), 300)
    assert.match(String(payload.nonce), /^[A-Za-z0-9_-]{43}$/)
    return { payload, returnTo: location.searchParams.get("return_to") }
  })

const refused = (url: string) =>
  Effect.promise(() =>
    fetch(url, { redirect: "manual", signal: AbortSignal.timeout(10_000) }).then(
      () => false,
      () => true
    )
  )

describe("serveHttp with loginRedirectResponse (in process)", () => {
  it.live("answers GET with distinct signed redirects, 405 otherwise, and closes with its scope", () =>
    withSecret((_home, secretPath) =>
      Effect.gen(function* () {
        const signer = yield* makeLoginUrlSigner({
          subject: "user-9",
          expiresInSeconds: 300,
          loginUrl: "http://127.0.0.1:8080/marketplace/login",
          returnTo: undefined,
          key: { alg: "HS256", path: secretPath }
        })
        const address = yield* Effect.scoped(
          Effect.gen(function* () {
            const address = yield* serveHttp({
              host: "127.0.0.1",
              port: 0,
              respond: loginRedirectResponse(signer, "/home")
            })
            assert.isAbove(address.port, 0)
            assert.strictEqual(address.url, `http://127.0.0.1:${address.port}`)
            const login = "http://127.0.0.1:8080/marketplace/login"
            const first = yield* redirected(`${address.url}/login-redirect?return_to=%2Fapps%3Fx%3D1`, login)
            const second = yield* redirected(`${address.url}/`, login)
            assert.strictEqual(first.payload.sub, "user-9")
            assert.strictEqual(first.returnTo, "/apps?x=1")
            assert.strictEqual(second.returnTo, "/home")
            assert.notStrictEqual(first.payload.nonce, second.payload.nonce)
            assert.notStrictEqual(first.payload.jti, second.payload.jti)
            const head = yield* request(address.url, "HEAD")
            assert.strictEqual(head.status, 302)
            const post = yield* request(`${address.url}/login-redirect`, "POST")
            assert.strictEqual(post.status, 405)
            assert.strictEqual(post.headers.get("allow"), "GET, HEAD")
            assert.isNull(post.headers.get("location"))
            return address
          })
        )
        assert.isTrue(yield* refused(address.url))
      })
    )
  )

  it.live("a port in use fails with a clear message", () =>
    withSecret((_home, secretPath) =>
      Effect.gen(function* () {
        const signer = yield* makeLoginUrlSigner({
          subject: "u",
          expiresInSeconds: 300,
          loginUrl: "http://127.0.0.1:8080/marketplace/login",
          returnTo: undefined,
          key: { alg: "HS256", path: secretPath }
        })
        const respond = loginRedirectResponse(signer, undefined)
        const taken = yield* serveHttp({ host: "127.0.0.1", port: 0, respond })
        const error = yield* Effect.flip(serveHttp({ host: "127.0.0.1", port: taken.port, respond }))
        assert.strictEqual(error.message, `cannot listen on 127.0.0.1:${taken.port}: address already in use`)
      })
    )
  )
})

describe("cli login-redirect (in process)", () => {
  it.live("--port 0 prints the real port, redirects each GET, stops when interrupted", () =>
    withSecret((_home, secretPath) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(
          runCli([
            "login-redirect",
            "--port",
            "0",
            "--actorId",
            "user-3",
            "--marketplaceUrl",
            "https://public.example",
            "--secretKeyPath",
            secretPath
          ])
        )
        // poll the console with a deadline until the listener reports its address
        const line = yield* TestConsole.logLines.pipe(
          Effect.map((lines) => lines.map(String).find((text) => listening.test(text))),
          Effect.flatMap((found) => (found === undefined ? Effect.fail("not yet" as const) : Effect.succeed(found))),
          Effect.retry(Schedule.spaced("20 millis")),
          Effect.timeoutOption("10 seconds")
        )
        assert.isTrue(Option.isSome(line), "login-redirect did not report its address")
        const url = Option.getOrThrow(line).match(listening)?.[1] ?? ""
        assert.notStrictEqual(url, "http://127.0.0.1:0")
        const login = "https://public.example/marketplace/login"
        const first = yield* redirected(`${url}/login-redirect?return_to=https%3A%2F%2Fapp.example%2F`, login)
        const second = yield* redirected(`${url}/login-redirect`, login)
        assert.strictEqual(first.payload.sub, "user-3")
        assert.strictEqual(first.returnTo, "https://app.example/")
        assert.isNull(second.returnTo)
        assert.notStrictEqual(first.payload.nonce, second.payload.nonce)
        yield* Fiber.interrupt(fiber)
        assert.isTrue(yield* refused(url))
      })
    )
  )
})

interface Child {
  readonly process: ChildProcessWithoutNullStreams
  readonly exit: Promise<number | null>
  readonly stderr: () => string
}

const spawnCli = (home: string, args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync((): Child => {
      const child = spawn(bin, args, {
        cwd: home,
        env: {
          ...process.env,
          HOME: home,
          NO_COLOR: "1",
          PATH: `${NodePath.dirname(process.execPath)}${NodePath.delimiter}${process.env.PATH ?? ""}`
        }
      })
      const exit = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      return { process: child, exit, stderr: () => stderr }
    }),
    ({ process: child, exit }) =>
      Effect.promise(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        return exit
      })
  )

/** Resolves with the first match of `pattern` on the child's stdout, or undefined if it exits first. */
const awaitStdout = (child: ChildProcessWithoutNullStreams, pattern: RegExp) =>
  Effect.callback<RegExpMatchArray | undefined>((resume) => {
    let text = ""
    const onData = (chunk: Buffer) => {
      text += chunk.toString()
      const match = text.match(pattern)
      if (match !== null) {
        child.stdout.off("data", onData)
        resume(Effect.succeed(match))
      }
    }
    child.stdout.on("data", onData)
    child.once("close", () => resume(Effect.succeed(undefined)))
    return Effect.sync(() => child.stdout.off("data", onData))
  })

describe("bin/cli login-redirect (end to end)", () => {
  it.live("--port 0 listens on a free port, redirects with new nonces, exits on SIGTERM", () =>
    withSecret((home, secretPath) =>
      Effect.gen(function* () {
        const child = yield* spawnCli(home, ["login-redirect", "--port", "0", "--secretKeyPath", secretPath])
        const match = yield* awaitStdout(child.process, listening).pipe(Effect.timeoutOption("45 seconds"))
        const url = Option.getOrUndefined(match)?.[1]
        assert.isDefined(url, `login-redirect did not report its address; stderr: ${child.stderr()}`)
        const login = "http://127.0.0.1:8080/marketplace/login"
        const first = yield* redirected(`${url}/login-redirect`, login)
        const second = yield* redirected(`${url}/`, login)
        assert.strictEqual(first.payload.sub, "admin")
        assert.notStrictEqual(first.payload.nonce, second.payload.nonce)
        child.process.kill("SIGTERM")
        assert.strictEqual(yield* Effect.promise(() => child.exit), 130)
        assert.strictEqual(child.stderr(), "")
      })
    )
  )
})
