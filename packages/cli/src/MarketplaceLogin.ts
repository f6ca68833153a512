/**
 * Signed marketplace login URLs (spec 4.8 `sign-marketplace-login-url`, spec 5.9): flags shared by
 * `sign-marketplace-login-url` and `login-redirect`, their resolution against the configuration,
 * the claims (`aud` exactly `["public"]`, short `exp`, single-use `nonce`) and the URL
 * `<marketplace base>/marketplace/login?token=<JWT>&return_to=<url>`.
 */
import { Clock, Console, Context, Effect, Option, Result } from "effect"
import type { TokenClaims } from "@svc/domain/Auth"
import { Flag } from "effect/cli"
import { randomBytes } from "node:crypto"
import { buildClaims } from "./Claims.ts"
import type { LoadedConfig } from "./CliConfig.ts"
import { CliFailure } from "./CliFailure.ts"
import { parseDuration } from "./Duration.ts"
import { signToken } from "./Jwt.ts"
import { loadSigningKey, signingKeyFlags } from "./Keys.ts"
import { resolveSigningKey } from "./SignPlan.ts"
import type { KeyRef } from "./SignPlan.ts"
import { TokenId } from "./TokenId.ts"

/** Public service base used when neither `--marketplaceUrl` nor config `server.marketplace` is set. */
export const defaultMarketplaceUrl = "http://127.0.0.1:8080"

/** Path of the public service's login endpoint, appended to the marketplace base URL. */
export const marketplaceLoginPath = "/marketplace/login"

/** Lifetime of a login token unless `--expires-in` is given: 5 minutes. */
export const defaultLoginExpirySeconds = 300

/** Random bytes in a login nonce (base64url encoded, 43 characters). */
export const nonceBytes = 32

/** Source of login `nonce` values: 32 random bytes, base64url, unless a test replaces it. */
export const LoginNonce = Context.Reference<{ readonly next: Effect.Effect<string> }>("@svc/cli/LoginNonce", {
  defaultValue: () => ({ next: Effect.sync(() => randomBytes(nonceBytes).toString("base64url")) })
})

/** Flags shared by `sign-marketplace-login-url` and `login-redirect`. */
export const marketplaceLoginFlags = {
  actorId: Flag.String("actorId").pipe(
    Flag.withMetavar("EXTERNAL_ID"),
    Flag.withDescription('Log in as the actor with this externalId (default: config admin_username, else "admin")'),
    Flag.optional
  ),
  returnTo: Flag.String("returnTo").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription('Where the marketplace sends the browser after login: absolute http(s) URL or "/path"'),
    Flag.optional
  ),
  expiresIn: Flag.String("expires-in").pipe(
    Flag.withMetavar("DURATION"),
    Flag.withDescription("Lifetime of the login token, units s m h d: 30s, 5m, 1h (default 5m)"),
    Flag.optional
  ),
  marketplaceUrl: Flag.String("marketplaceUrl").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(`Public service base URL (default: config server.marketplace, else ${defaultMarketplaceUrl})`),
    Flag.optional
  ),
  ...signingKeyFlags
}

/** Parsed values of `marketplaceLoginFlags`. */
export interface MarketplaceLoginFlags {
  readonly actorId: Option.Option<string>
  readonly returnTo: Option.Option<string>
  readonly expiresIn: Option.Option<string>
  readonly marketplaceUrl: Option.Option<string>
  readonly privateKeyPath: Option.Option<string>
  readonly secretKeyPath: Option.Option<string>
}

/** Everything needed to sign login URLs besides the clock, randomness and the key file's content. */
export interface MarketplaceLoginPlan {
  readonly subject: string
  readonly expiresInSeconds: number
  /** Absolute URL of the login endpoint, without query. */
  readonly loginUrl: string
  readonly returnTo: string | undefined
  readonly key: KeyRef
}

/**
 * Checks a marketplace base URL (`what` names its source in the message) and returns the login
 * endpoint URL: http(s), no credentials, query or fragment; a base path is kept.
 */
export const parseMarketplaceUrl = (text: string, what: string): Result.Result<string, CliFailure> => {
  const fail = (reason: string) => Result.fail(new CliFailure({ message: `${what}: ${reason} (got "${text}")` }))
  if (!URL.canParse(text)) return fail("expected an absolute http(s) URL")
  const url = new URL(text)
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail("expected an http or https URL")
  if (url.username !== "" || url.password !== "") {
    return Result.fail(new CliFailure({ message: `${what}: must not contain credentials` }))
  }
  if (url.search !== "" || url.hash !== "") return fail("must not contain a query or fragment")
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${marketplaceLoginPath}`
  return Result.succeed(url.href)
}

/** Checks a `return_to` value: an absolute http(s) URL or an absolute path (`/x`, not `//x`). */
export const parseReturnTo = (text: string, what: string): Result.Result<string, CliFailure> => {
  if (text.startsWith("/") && !text.startsWith("//") && !text.startsWith("/\\")) return Result.succeed(text)
  if (URL.canParse(text) && ["http:", "https:"].includes(new URL(text).protocol)) return Result.succeed(text)
  return Result.fail(
    new CliFailure({ message: `${what}: expected an absolute http(s) URL or a path starting with "/" (got "${text}")` })
  )
}

/** Usage errors of the flags alone (exclusive keys, empty actor, malformed values); empty when valid. */
export const marketplaceLoginFlagErrors = (flags: MarketplaceLoginFlags): ReadonlyArray<string> => {
  const errors: Array<string> = []
  if (Option.isSome(flags.actorId) && flags.actorId.value.trim() === "") errors.push("--actorId must not be empty")
  if (Option.isSome(flags.privateKeyPath) && Option.isSome(flags.secretKeyPath)) {
    errors.push("--privateKeyPath and --secretKeyPath are mutually exclusive")
  }
  if (Option.isSome(flags.expiresIn)) {
    const parsed = parseDuration(flags.expiresIn.value)
    if (Result.isFailure(parsed)) errors.push(`--expires-in: ${parsed.failure.message}`)
  }
  if (Option.isSome(flags.marketplaceUrl)) {
    const parsed = parseMarketplaceUrl(flags.marketplaceUrl.value, "--marketplaceUrl")
    if (Result.isFailure(parsed)) errors.push(parsed.failure.message)
  }
  if (Option.isSome(flags.returnTo)) {
    const parsed = parseReturnTo(flags.returnTo.value, "--returnTo")
    if (Result.isFailure(parsed)) errors.push(parsed.failure.message)
  }
  return errors
}

/**
 * Resolves flags and configuration: actor from `--actorId`, else `admin_username`, else `admin`;
 * base URL from `--marketplaceUrl`, else `server.marketplace`, else `defaultMarketplaceUrl`.
 */
export const resolveMarketplaceLoginPlan = (
  flags: MarketplaceLoginFlags,
  loaded: LoadedConfig
): Result.Result<MarketplaceLoginPlan, CliFailure> =>
  Result.gen(function* () {
    const problems = marketplaceLoginFlagErrors(flags)
    if (problems.length > 0) return yield* Result.fail(new CliFailure({ message: problems.join("\n") }))
    const subject = Option.getOrElse(flags.actorId, () => loaded.config.admin_username ?? "admin")
    const expiresInSeconds = Option.isSome(flags.expiresIn)
      ? yield* Result.mapError(
          parseDuration(flags.expiresIn.value),
          (error) => new CliFailure({ message: error.message })
        )
      : defaultLoginExpirySeconds
    const configured = loaded.config.server?.marketplace
    const loginUrl = Option.isSome(flags.marketplaceUrl)
      ? yield* parseMarketplaceUrl(flags.marketplaceUrl.value, "--marketplaceUrl")
      : configured !== undefined
        ? yield* parseMarketplaceUrl(configured, `config "${loaded.source}" server.marketplace`)
        : yield* parseMarketplaceUrl(defaultMarketplaceUrl, "default marketplace URL")
    const returnTo = Option.isSome(flags.returnTo)
      ? yield* parseReturnTo(flags.returnTo.value, "--returnTo")
      : undefined
    const key = yield* resolveSigningKey(flags, loaded)
    return { subject, expiresInSeconds, loginUrl, returnTo, key }
  })

/** Inputs of `buildLoginClaims`; times are whole seconds since the epoch. */
export interface LoginClaimsInput {
  readonly subject: string
  readonly issuedAt: number
  readonly jti: string
  readonly nonce: string
  readonly expiresInSeconds: number
}

/** The claims of a login token: the `sign-jwt` claims with `aud: ["public"]`, `exp` and `nonce`. */
export const buildLoginClaims = (input: LoginClaimsInput): TokenClaims => ({
  ...buildClaims({
    subject: input.subject,
    issuedAt: input.issuedAt,
    jti: input.jti,
    expiresInSeconds: input.expiresInSeconds,
    apis: ["public"],
    permissions: undefined
  }),
  nonce: input.nonce
})

/** `loginUrl?token=<token>[&return_to=<returnTo>]`, query values percent-encoded. */
export const loginUrlWithToken = (loginUrl: string, token: string, returnTo: string | undefined): string => {
  const url = new URL(loginUrl)
  url.searchParams.set("token", token)
  if (returnTo !== undefined) url.searchParams.set("return_to", returnTo)
  return url.href
}

/** Signs login URLs with a key loaded once; every call has a fresh `jti`, `nonce` and `iat`. */
export interface LoginUrlSigner {
  readonly sign: (returnTo: string | undefined) => Effect.Effect<string, CliFailure>
}

/** Loads the plan's signing key and returns a `LoginUrlSigner` for the plan's actor and lifetime. */
export const makeLoginUrlSigner = Effect.fnUntraced(function* (plan: MarketplaceLoginPlan) {
  const signing = yield* loadSigningKey(plan.key)
  const sign = Effect.fnUntraced(function* (returnTo: string | undefined) {
    const nowMillis = yield* Clock.currentTimeMillis
    const jti = yield* (yield* TokenId).next
    const nonce = yield* (yield* LoginNonce).next
    const claims = buildLoginClaims({
      subject: plan.subject,
      issuedAt: Math.floor(nowMillis / 1000),
      jti,
      nonce,
      expiresInSeconds: plan.expiresInSeconds
    })
    return loginUrlWithToken(plan.loginUrl, yield* signToken(claims, signing), returnTo)
  })
  return { sign } satisfies LoginUrlSigner
})

/** An HTTP answer of the login-redirect endpoint, independent of the server that sends it. */
export interface LoginRedirectResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

const plain = (status: number, body: string, extra: Record<string, string> = {}): LoginRedirectResponse => ({
  status,
  headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", ...extra },
  body: `${body}\n`
})

const requestReturnTo = (target: string): string | undefined => {
  try {
    return new URL(target, "http://login-redirect.invalid").searchParams.get("return_to") ?? undefined
  } catch {
    return undefined
  }
}

/**
 * The session-initiation stand-in (spec 5.9, `host_application.initiate_session_url`): a GET or
 * HEAD on any path answers 302 to a freshly signed login URL, passing the request's `return_to`
 * through (else `defaultReturnTo`); other methods answer 405. The Location header is the only
 * place the token appears.
 */
export const loginRedirectResponse =
  (signer: LoginUrlSigner, defaultReturnTo: string | undefined) =>
  (method: string, target: string): Effect.Effect<LoginRedirectResponse> => {
    if (method !== "GET" && method !== "HEAD") {
      return Effect.succeed(plain(405, "method not allowed", { Allow: "GET, HEAD" }))
    }
    return signer.sign(requestReturnTo(target) ?? defaultReturnTo).pipe(
      Effect.map(
        (location): LoginRedirectResponse => ({
          status: 302,
          headers: { Location: location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" },
          body: ""
        })
      ),
      Effect.catch((failure) =>
        Effect.as(
          Console.error(`login-redirect: ${failure.message}`),
          plain(500, "cannot sign the marketplace login URL")
        )
      )
    )
  }
