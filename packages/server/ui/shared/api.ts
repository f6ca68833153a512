/**
 * Plain fetch wrappers for the browser applications: same-origin JSON calls that carry the
 * session cookie (sent by the browser, never readable here: it is HttpOnly) and echo the XSRF
 * cookie's value in `X-XSRF-TOKEN` on every write. A non-2xx answer becomes an {@link ApiError}
 * holding the standard error body (`{error, code, details?}`).
 */

/** One entry of an error body's `details`. */
export interface ErrorDetail {
  readonly field: string
  readonly message: string
}

/** A failed call: the HTTP status and the standard error body's fields. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details: ReadonlyArray<ErrorDetail>
  constructor(status: number, message: string, code: string, details: ReadonlyArray<ErrorDetail>) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

/** A list page (`cursor` absent on the last page). */
export interface Page<T> {
  readonly items: ReadonlyArray<T>
  readonly cursor?: string
}

/** The value of a cookie readable by scripts, or undefined. */
export const readCookie = (name: string): string | undefined => {
  for (const part of document.cookie.split(";")) {
    const at = part.indexOf("=")
    if (at !== -1 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim())
  }
  return undefined
}

const errorOf = (status: number, body: unknown): ApiError => {
  if (typeof body === "object" && body !== null) {
    const record = body as Record<string, unknown>
    const message = typeof record.error === "string" ? record.error : `request failed with status ${status}`
    const code = typeof record.code === "string" ? record.code : status === 429 ? "rate_limited" : "http_error"
    const details = Array.isArray(record.details) ? (record.details as Array<ErrorDetail>) : []
    return new ApiError(status, message, code, details)
  }
  return new ApiError(status, `request failed with status ${status}`, "http_error", [])
}

/** JSON calls bound to the XSRF cookie of one application. */
export interface Api {
  readonly get: <T>(path: string, query?: Readonly<Record<string, string | undefined>>) => Promise<T>
  readonly send: <T>(method: "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown) => Promise<T>
}

/** Builds the wrappers; `xsrfCookie` names the cookie whose value goes into `X-XSRF-TOKEN`. */
export const makeApi = (xsrfCookie: string): Api => {
  const call = async <T>(method: string, path: string, body: unknown): Promise<T> => {
    const headers: Record<string, string> = { accept: "application/json" }
    if (method !== "GET") {
      const xsrf = readCookie(xsrfCookie)
      if (xsrf !== undefined) headers["x-xsrf-token"] = xsrf
    }
    if (body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    let parsed: unknown
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    if (!response.ok) throw errorOf(response.status, parsed)
    return parsed as T
  }
  return {
    get: (path, query) => {
      const params = new URLSearchParams()
      for (const [key, value] of Object.entries(query ?? {}))
        if (value !== undefined && value !== "") params.set(key, value)
      const search = params.toString()
      return call("GET", search === "" ? path : `${path}?${search}`, undefined)
    },
    send: (method, path, body) => call(method, path, body)
  }
}

/** A readable message for anything thrown by a call. */
export const describeError = (error: unknown): string => {
  if (error instanceof ApiError) {
    const details = error.details.map((d) => `${d.field}: ${d.message}`).join("; ")
    return details === "" ? `${error.message} (${error.code})` : `${error.message} (${error.code}): ${details}`
  }
  return error instanceof Error ? error.message : String(error)
}
