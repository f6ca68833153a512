/**
 * Plain fetch wrappers for the browser applications: same-origin JSON calls that carry the
 * session cookie (sent by the browser, never readable here: it is HttpOnly) and echo the XSRF
 * cookie's value in `X-XSRF-TOKEN` on every write. A non-2xx answer becomes an {@link ApiError}
 * holding the standard error body (`{error, code, details?}`). A 2xx answer is handed back as its
 * text: shared/endpoints.ts types it by the HttpApi declaration, and `parseJson` gives plain
 * routes an `unknown` to check.
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

const field = (body: object, key: string): unknown => (key in body ? Reflect.get(body, key) : undefined)

const isErrorDetail = (value: unknown): value is ErrorDetail =>
  typeof value === "object" &&
  value !== null &&
  typeof field(value, "field") === "string" &&
  typeof field(value, "message") === "string"

const errorOf = (status: number, body: unknown): ApiError => {
  if (typeof body === "object" && body !== null) {
    const error = field(body, "error")
    const code = field(body, "code")
    const details = field(body, "details")
    return new ApiError(
      status,
      typeof error === "string" ? error : `request failed with status ${status}`,
      typeof code === "string" ? code : status === 429 ? "rate_limited" : "http_error",
      Array.isArray(details) ? details.filter(isErrorDetail) : []
    )
  }
  return new ApiError(status, `request failed with status ${status}`, "http_error", [])
}

/** A body's JSON as `unknown` (undefined when empty or not JSON), for the caller to check. */
export const parseJson = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

type FieldKind = "string" | "string?" | "strings"

const fieldIs = (value: unknown, kind: FieldKind): boolean =>
  kind === "strings"
    ? Array.isArray(value) && value.every((item) => typeof item === "string")
    : typeof value === "string" || (kind === "string?" && value === null)

/**
 * A guard for the answer of a plain (non-HttpApi) route: an object whose named fields have the
 * given kinds (`string`, `string?` for string or null, `strings` for a string array).
 */
export const hasFields =
  <T>(fields: { readonly [K in keyof T]-?: FieldKind }) =>
  (value: unknown): value is T =>
    typeof value === "object" &&
    value !== null &&
    Object.entries<FieldKind>(fields).every(([key, kind]) => fieldIs(field(value, key), kind))

/** GET of a plain route whose JSON answer `is` checks; another answer is an {@link ApiError}. */
export const getChecked = async <T>(api: Api, path: string, is: (value: unknown) => value is T): Promise<T> => {
  const body = parseJson(await api.get(path))
  if (!is(body)) throw new ApiError(200, `unexpected answer from ${path}`, "unexpected_answer", [])
  return body
}

/** JSON calls bound to the XSRF cookie of one application; each answers a 2xx body's text. */
export interface Api {
  readonly get: (path: string, query?: Readonly<Record<string, string | undefined>>) => Promise<string>
  readonly send: (method: "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown) => Promise<string>
}

/** Builds the wrappers; `xsrfCookie` names the cookie whose value goes into `X-XSRF-TOKEN`. */
export const makeApi = (xsrfCookie: string): Api => {
  const call = async (method: string, path: string, body: unknown): Promise<string> => {
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
    if (!response.ok) throw errorOf(response.status, parseJson(text))
    return text
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
