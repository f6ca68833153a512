/**
 * The OAuth2 client of an authorization-code connector: the definition names the client id, the
 * server configuration holds its secret (`oauth2.clients`, from a file, an environment variable or
 * a value, read when used). A public client (`client_auth: none`) needs no secret. Failures name
 * the client id and what is missing, never a secret.
 */
import type { OAuth2AuthorizationCodeAuth } from "@svc/domain/ConnectorAuth"
import { Config, Context, Effect, Layer, Redacted, Schema } from "effect"
import * as fs from "node:fs/promises"
import { type ClientSecretSource, SvcConfig } from "../config/SvcConfig.ts"
import type { OAuth2Client } from "../oauth/ClientAuth.ts"

/** Why the client could not be resolved. */
export const OAuthClientProblem = Schema.Literals(["no_client_id", "no_client_secret", "secret_unreadable"])
export type OAuthClientProblem = typeof OAuthClientProblem.Type

/** The client of an authorization-code definition cannot be used (a server configuration problem). */
export class OAuthClientUnavailable extends Schema.TaggedError<OAuthClientUnavailable>()("OAuthClientUnavailable", {
  problem: OAuthClientProblem,
  clientId: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `the OAuth2 client${this.clientId === undefined ? "" : ` ${this.clientId}`} cannot be used: ${this.detail}`
  }
}

const describe = (source: ClientSecretSource): string => {
  switch (source.source) {
    case "file":
      return `the file ${source.path}`
    case "env":
      return `the environment variable ${source.name}`
    case "value":
      return "the configured value"
  }
}

/** Resolution of OAuth2 clients. */
export class OAuthClient extends Context.Service<
  OAuthClient,
  {
    /** The client id and (unless `client_auth: none`) secret for requests to `auth`'s endpoints. */
    readonly resolve: (
      auth: typeof OAuth2AuthorizationCodeAuth.Type
    ) => Effect.Effect<OAuth2Client, OAuthClientUnavailable>
  }
>()("@svc/server/OAuthClient") {
  static readonly layerNoDeps: Layer.Layer<OAuthClient, never, SvcConfig> = Layer.effect(
    OAuthClient,
    Effect.gen(function* () {
      const config = yield* SvcConfig
      const clients = config.oauth2.clients

      const read = (clientId: string, source: ClientSecretSource) => {
        const unreadable = (why: string) =>
          new OAuthClientUnavailable({ problem: "secret_unreadable", clientId, detail: `${describe(source)} ${why}` })
        switch (source.source) {
          case "value":
            return Effect.succeed(Redacted.value(source.value))
          case "env":
            return Config.String(source.name).pipe(Effect.mapError(() => unreadable("is not set")))
          case "file":
            return Effect.tryPromise({
              try: () => fs.readFile(source.path, "utf8"),
              catch: (e) =>
                unreadable(`cannot be read (${e instanceof Error && "code" in e ? String(e.code) : "error"})`)
            }).pipe(Effect.map((text) => text.trim()))
        }
      }

      const resolve = Effect.fn("OAuthClient.resolve")(function* (auth: typeof OAuth2AuthorizationCodeAuth.Type) {
        const clientId = auth.client_id
        if (clientId === undefined) {
          return yield* new OAuthClientUnavailable({
            problem: "no_client_id",
            detail: "the connector definition names no auth.client_id"
          })
        }
        if (auth.client_auth === "none") return { client_id: clientId }
        const source = clients.get(clientId)
        if (source === undefined) {
          return yield* new OAuthClientUnavailable({
            problem: "no_client_secret",
            clientId,
            detail: `client_auth ${auth.client_auth} needs a secret and none is configured (oauth2.clients)`
          })
        }
        const secret = yield* read(clientId, source)
        if (secret === "") {
          return yield* new OAuthClientUnavailable({
            problem: "secret_unreadable",
            clientId,
            detail: `${describe(source)} is empty`
          })
        }
        return { client_id: clientId, client_secret: secret }
      })

      return OAuthClient.of({ resolve })
    })
  )
}
