/**
 * The connector definition document (snake_case, API-CONVENTIONS). This version covers display
 * metadata and the auth method; the full document (auth details, setup flows, probes, proxy,
 * rate limiting, hooks) extends it.
 */
import { Schema } from "effect"

/** The auth methods a connector may declare. */
export const AuthType = Schema.Literals(["none", "api_key", "basic", "oauth2"])
export type AuthType = typeof AuthType.Type

/** `type`: the kind of integration (e.g. `github`), projected as `svc/cxr/type` on connections. */
export const ConnectorType = Schema.String.check(
  Schema.makeFilter((value: string) => /^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$/.test(value), {
    message: "type is 1 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending alphanumeric"
  })
)

/** A connector definition version's document. */
export const ConnectorDefinition = Schema.Struct({
  type: ConnectorType,
  display_name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4000))),
  logo_url: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(2048))),
  auth: Schema.Struct({ type: AuthType })
})
export type ConnectorDefinition = typeof ConnectorDefinition.Type
