/**
 * Pure resolution of `cli signing-proxy` (spec 4.8): which service it forwards to and on which
 * port it listens (flag, else the configured environment variable, else the configured default,
 * else 8888; `--clone N` adds 10 per clone).
 */
import { Option, Result } from "effect"
import * as NodePath from "node:path"
import type { LoadedConfig } from "./CliConfig.ts"
import { CliFailure } from "./CliFailure.ts"

/** Port when neither flag, environment variable nor config names one (spec 4.8). */
export const defaultSigningProxyPort = 8888

/** Environment variable read when the config names none (spec 4.8 `signing_proxy.port.env_var`). */
export const defaultPortEnvVar = "SVC_SIGNING_PROXY_PORT"

/** What each further clone adds to the port (README "signing-proxy"). */
export const clonePortStep = 10

/** The service ids `--proxyTo` accepts besides an absolute URL. */
export const proxyToServices = ["api", "admin-api", "public"] as const

/** Base URLs of the embedded default's services (ARCHITECTURE "Processes"). */
export const embeddedServiceUrls = {
  api: "http://127.0.0.1:8081",
  "admin-api": "https://127.0.0.1:8082",
  public: "http://127.0.0.1:8080"
} as const

/** The embedded default's self-signed admin-api certificate, relative to its working directory. */
export const devAdminCertRelativePath = NodePath.join(".svc", "tls", "admin-api.crt")

/** Where forwarded requests go. `embedded` is true when an embedded default URL was chosen. */
export interface ProxyTarget {
  readonly name: string
  readonly base: URL
  readonly embedded: boolean
}

const parseBase = (text: string, what: string): Result.Result<URL, CliFailure> => {
  const fail = (reason: string) => Result.fail(new CliFailure({ message: `${what}: ${reason} (got "${text}")` }))
  if (!URL.canParse(text)) return fail(`expected ${proxyToServices.join(", ")} or an absolute http(s) URL`)
  const url = new URL(text)
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail("expected an http or https URL")
  if (url.username !== "" || url.password !== "") {
    return Result.fail(new CliFailure({ message: `${what}: must not contain credentials` }))
  }
  if (url.search !== "" || url.hash !== "") return fail("must not contain a query or fragment")
  return Result.succeed(url)
}

/**
 * Resolves `--proxyTo`: a service id takes config `server.api` (overridden by `--apiUrl`), `server.admin_api` or
 * `server.marketplace` (else `server.auth`) and else the embedded default; anything else must be
 * an absolute http(s) URL, whose path becomes a prefix of every forwarded path.
 */
export const resolveProxyTarget = (
  proxyTo: string,
  loaded: LoadedConfig,
  apiUrl: Option.Option<string> = Option.none()
): Result.Result<ProxyTarget, CliFailure> => {
  const server = loaded.config.server
  if (proxyTo === "api" && Option.isSome(apiUrl)) {
    return Result.map(parseBase(apiUrl.value, "--apiUrl"), (base) => ({ name: "api", base, embedded: false }))
  }
  const configured =
    proxyTo === "api"
      ? server?.api
      : proxyTo === "admin-api"
        ? server?.admin_api
        : proxyTo === "public"
          ? (server?.marketplace ?? server?.auth)
          : undefined
  const isService = (proxyToServices as ReadonlyArray<string>).includes(proxyTo)
  if (!isService)
    return Result.map(parseBase(proxyTo, "--proxyTo"), (base) => ({ name: base.origin, base, embedded: false }))
  if (configured !== undefined) {
    return Result.map(parseBase(configured, `config "${loaded.source}" server url of ${proxyTo}`), (base) => ({
      name: proxyTo,
      base,
      embedded: false
    }))
  }
  return Result.succeed({
    name: proxyTo,
    base: new URL(embeddedServiceUrls[proxyTo as keyof typeof embeddedServiceUrls]),
    embedded: true
  })
}

/** The URL a request target (`/path?query`) is forwarded to: the base's path, then the target. */
export const forwardUrl = (base: URL, target: string): URL => {
  const url = new URL(base.href)
  const path = target.startsWith("/") ? target : `/${target}`
  const query = path.indexOf("?")
  url.pathname = `${base.pathname.replace(/\/+$/, "")}${query === -1 ? path : path.slice(0, query)}`
  url.search = query === -1 ? "" : path.slice(query)
  return url
}

/** The listen port and where it came from (shown in the start line). */
export interface ResolvedPort {
  readonly port: number
  readonly source: string
}

const parsePort = (text: string): number | undefined => {
  if (!/^\d{1,5}$/.test(text.trim())) return undefined
  const port = Number(text.trim())
  return port <= 65_535 ? port : undefined
}

/**
 * The listen port: `--port` as given; else the environment variable named by
 * `signing_proxy.port.env_var` (default `SVC_SIGNING_PROXY_PORT`) when set and not empty; else
 * `signing_proxy.port.default`; else 8888. `--clone N` adds 10·N to the last three (not to
 * `--port`, which is exact; the two are exclusive).
 */
export const resolveSigningProxyPort = (
  flags: { readonly port: Option.Option<number>; readonly clone: number },
  loaded: LoadedConfig,
  env: (name: string) => string | undefined
): Result.Result<ResolvedPort, CliFailure> => {
  if (Option.isSome(flags.port)) return Result.succeed({ port: flags.port.value, source: "--port" })
  const name = loaded.config.signing_proxy?.port?.env_var ?? defaultPortEnvVar
  const fromEnv = env(name)
  const base =
    fromEnv !== undefined && fromEnv.trim() !== ""
      ? { port: parsePort(fromEnv), source: `$${name}` }
      : loaded.config.signing_proxy?.port?.default !== undefined
        ? { port: loaded.config.signing_proxy.port.default, source: "config signing_proxy.port.default" }
        : { port: defaultSigningProxyPort, source: "default" }
  if (base.port === undefined) {
    return Result.fail(new CliFailure({ message: `environment variable ${name}="${fromEnv}" is not a port (0-65535)` }))
  }
  const port = base.port + clonePortStep * flags.clone
  if (port > 65_535) {
    return Result.fail(
      new CliFailure({
        message: `--clone ${flags.clone}: port ${base.port} + ${clonePortStep}×${flags.clone} is above 65535`
      })
    )
  }
  return Result.succeed({
    port,
    source: flags.clone === 0 ? base.source : `${base.source} + ${clonePortStep}×${flags.clone} (--clone)`
  })
}
