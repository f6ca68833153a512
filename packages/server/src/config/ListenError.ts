/**
 * A listener that could not bind, as one line naming the configuration key to change and its
 * `SVC__…` variable: `api.port: 8081 is in use (EADDRINUSE); set api.port or SVC__api__port`.
 */
import { Data } from "effect"
import type { ServiceId } from "@svc/domain/Auth"

/** A socket could not be bound; `message` names the key to change. */
export class ListenError extends Data.TaggedError("ListenError")<{ readonly message: string }> {}

/** The configuration block of a service's listener (`admin-api` → `admin_api`). */
export const listenerKey = (service: ServiceId): string => (service === "admin-api" ? "admin_api" : service)

const envVar = (key: string) => `SVC__${key.split(".").join("__")}`

/** The `E…` code of a Node error, searched through `cause` and `reason` wrappers (`ServeError`, `SocketServerError`). */
export const errnoCode = (error: unknown): string | undefined => {
  let current = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && code.startsWith("E")) return code
    const next = (current as { cause?: unknown; reason?: unknown }).cause ?? (current as { reason?: unknown }).reason
    current = next
  }
  return undefined
}

/**
 * The line for a failed bind of `host:port` configured at `block` (`api`, `telemetry.prometheus`,
 * `cluster.runner`): a port in use or reserved names `<block>.port`, an address this machine
 * does not have names `<block>.host`.
 */
export const listenError = (block: string, host: string, port: number, cause: unknown): ListenError => {
  const code = errnoCode(cause)
  const portKey = `${block}.port`
  const hostKey = `${block}.host`
  const set = (key: string) => `set ${key} or ${envVar(key)}`
  switch (code) {
    case "EADDRINUSE":
      return new ListenError({ message: `${portKey}: ${port} is in use (EADDRINUSE); ${set(portKey)}` })
    case "EACCES":
      return new ListenError({
        message: `${portKey}: ${port} needs privileges this process lacks (EACCES); ${set(portKey)}`
      })
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return new ListenError({
        message: `${hostKey}: ${host} is not an address of this machine (${code}); ${set(hostKey)}`
      })
    default:
      return new ListenError({
        message: `${block}: cannot listen on ${host}:${port} (${code ?? "unknown error"}); ${set(portKey)}`
      })
  }
}
