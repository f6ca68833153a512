/**
 * Test support for the OAuth2 client functions: a `send` bound to a LocalServer on loopback,
 * JSON answers, the form body of a recorded request and a scoped live test with `Outbound`.
 */
import type { ServerResponse } from "node:http"
import { it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { Outbound, type OutboundRequest } from "../../outbound/Outbound.ts"
import type { LocalServer, RecordedRequest } from "../../outbound/testing/LocalServer.ts"
import type { SendOutbound } from "../TokenEndpoint.ts"

/** `Outbound.send` allowed to reach only `server` (loopback), with bounded timeouts and body size. */
export const sendTo = (
  server: LocalServer,
  options: { readonly totalMs?: number; readonly allowPrivateNetworks?: boolean } = {}
): Effect.Effect<SendOutbound, never, Outbound> =>
  Effect.gen(function* () {
    const outbound = yield* Outbound
    return (request: OutboundRequest) =>
      outbound.send(request, {
        policy: {
          allowedHosts: [`127.0.0.1:${server.port}`],
          allowPrivateNetworks: options.allowPrivateNetworks ?? true
        },
        timeouts: { connectMs: 5_000, firstByteMs: options.totalMs ?? 5_000, totalMs: options.totalMs ?? 10_000 },
        maxResponseBytes: 64 * 1024
      })
  })

/** Answers with `status` and a JSON body (a string is sent as is). */
export const json = (response: ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(typeof body === "string" ? body : JSON.stringify(body))
}

/** The form-encoded body of a recorded request as an object. */
export const formOf = (request: RecordedRequest | undefined): Record<string, string> =>
  Object.fromEntries(new URLSearchParams(request?.body.toString()))

/** A live test with a scope and the production `Outbound` layer. */
export const oauthTest = (name: string, body: () => Effect.Effect<void, unknown, Outbound | Scope.Scope>): void => {
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Outbound.layer)))
}
