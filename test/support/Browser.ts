/**
 * A small plain-HTTP user agent for black-box OAuth tests: global fetch with manual redirects, a
 * cookie jar keyed by host:port (Path, Max-Age and Expires honoured; HttpOnly/Secure recorded),
 * redirect following with a stop predicate, and `authorizeAtProvider`, which walks an
 * authorization-code flow through the provider's own login and consent HTML forms.
 */

/** A stored cookie. */
export interface Cookie {
  readonly name: string
  readonly value: string
  readonly path: string
  /** Epoch milliseconds; undefined for a session cookie. */
  readonly expiresAt: number | undefined
  readonly httpOnly: boolean
  readonly secure: boolean
  readonly sameSite: string | undefined
}

/** One answered request, body read as text. */
export interface BrowserResponse {
  readonly method: string
  readonly url: string
  readonly status: number
  readonly headers: Headers
  /** The `Location` header resolved against `url`. */
  readonly location: string | undefined
  readonly body: string
}

/** One request of a journey. */
export interface Hop {
  readonly method: string
  readonly url: string
  readonly status: number
  readonly location: string | undefined
}

/** What `follow` and `authorizeAtProvider` answer. */
export interface Journey {
  readonly hops: ReadonlyArray<Hop>
  /** The last response received (a redirect when the journey stopped at `stoppedAt`). */
  readonly final: BrowserResponse
  /** The URL that `stopAt` accepted; it was not requested. */
  readonly stoppedAt: string | undefined
}

/** Per-request options: `cookies: false` neither sends nor stores cookies. */
export interface RequestOptions {
  readonly headers?: Readonly<Record<string, string>>
  readonly cookies?: boolean
}

/** Options of `follow`. */
export interface FollowOptions {
  /** Checked on every redirect target before it is requested; true stops the journey there. */
  readonly stopAt?: (url: string) => boolean
  /** Default 20. */
  readonly maxRedirects?: number
}

/** Options of `authorizeAtProvider`. */
export interface AuthorizeOptions extends FollowOptions {
  /** The login name typed into the provider's login form; default "alice". */
  readonly login?: string
  readonly password?: string
  /** Forms submitted at most (login + consent); default 4. */
  readonly maxForms?: number
}

/** A parsed HTML form. */
export interface HtmlForm {
  /** Absolute action URL. */
  readonly action: string
  /** Lower case. */
  readonly method: string
  readonly inputs: ReadonlyArray<{ readonly name: string; readonly type: string; readonly value: string }>
}

/** The user agent. */
export interface Browser {
  readonly get: (url: string, options?: RequestOptions) => Promise<BrowserResponse>
  readonly post: (
    url: string,
    form: Readonly<Record<string, string>> | URLSearchParams,
    options?: RequestOptions
  ) => Promise<BrowserResponse>
  /** GETs `url` and follows 30x redirects (303 and POST-after-301/302 become GET; 307/308 keep the method). */
  readonly follow: (url: string, options?: FollowOptions) => Promise<Journey>
  /** Follows from `startUrl`, submitting the provider's login and consent forms, until `stopAt` or a non-form answer. */
  readonly authorizeAtProvider: (startUrl: string, options?: AuthorizeOptions) => Promise<Journey>
  /** Live cookies that would be sent to `url`'s host:port (all paths). */
  readonly cookies: (url: string) => ReadonlyArray<Cookie>
  readonly cookie: (url: string, name: string) => Cookie | undefined
  readonly setCookie: (url: string, name: string, value: string, path?: string) => void
  /** Forgets the cookies of `url`'s host:port, or every cookie. */
  readonly clearCookies: (url?: string) => void
}

const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }
const decode = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) =>
    entity.startsWith("#x") || entity.startsWith("#X")
      ? String.fromCodePoint(Number.parseInt(entity.slice(2), 16))
      : entity.startsWith("#")
        ? String.fromCodePoint(Number.parseInt(entity.slice(1), 10))
        : (entities[entity.toLowerCase()] ?? whole)
  )

const attributes = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const match of text.matchAll(/([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g)) {
    const name = match[1]
    if (name !== undefined) out[name.toLowerCase()] = decode(match[2] ?? match[3] ?? match[4] ?? "")
  }
  return out
}

/** The forms of an HTML page, actions resolved against `baseUrl`. */
export const parseForms = (html: string, baseUrl: string): ReadonlyArray<HtmlForm> =>
  [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map((match) => {
    const form = attributes(match[1] ?? "")
    const inputs = [...(match[2] ?? "").matchAll(/<input\b([^>]*)>/gi)]
      .map((input) => attributes(input[1] ?? ""))
      .filter((input) => input.name !== undefined && input.name !== "")
      .map((input) => ({
        name: input.name ?? "",
        type: (input.type ?? "text").toLowerCase(),
        value: input.value ?? ""
      }))
    return {
      action: new URL(form.action ?? "", baseUrl).href,
      method: (form.method ?? "get").toLowerCase(),
      inputs
    }
  })

const withoutQuery = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname}`
}

const pathMatches = (cookiePath: string, requestPath: string) =>
  requestPath === cookiePath ||
  (requestPath.startsWith(cookiePath) && (cookiePath.endsWith("/") || requestPath[cookiePath.length] === "/"))

const defaultPath = (requestPath: string) => {
  const last = requestPath.lastIndexOf("/")
  return last <= 0 ? "/" : requestPath.slice(0, last)
}

const parseSetCookie = (header: string, requestPath: string, now: number): Cookie | undefined => {
  const [pair = "", ...parts] = header.split(";")
  const eq = pair.indexOf("=")
  if (eq <= 0) return undefined
  let path = defaultPath(requestPath)
  let expiresAt: number | undefined
  let maxAge: number | undefined
  let httpOnly = false
  let secure = false
  let sameSite: string | undefined
  for (const part of parts) {
    const [rawKey = "", ...rest] = part.split("=")
    const key = rawKey.trim().toLowerCase()
    const value = rest.join("=").trim()
    if (key === "path" && value.startsWith("/")) path = value
    else if (key === "max-age" && /^-?\d+$/.test(value)) maxAge = Number(value)
    else if (key === "expires" && !Number.isNaN(Date.parse(value))) expiresAt = Date.parse(value)
    else if (key === "httponly") httpOnly = true
    else if (key === "secure") secure = true
    else if (key === "samesite") sameSite = value
  }
  if (maxAge !== undefined) expiresAt = now + maxAge * 1000
  const name = pair.slice(0, eq).trim()
  return { name, value: pair.slice(eq + 1).trim(), path, expiresAt, httpOnly, secure, sameSite }
}

const isRedirect = (status: number) => [301, 302, 303, 307, 308].includes(status)

/** A fresh user agent with an empty cookie jar. */
export const makeBrowser = (): Browser => {
  const jar = new Map<string, Map<string, Cookie>>()
  const live = (host: string) => {
    const cookies = jar.get(host) ?? new Map<string, Cookie>()
    jar.set(host, cookies)
    for (const [key, cookie] of cookies) {
      if (cookie.expiresAt !== undefined && cookie.expiresAt <= Date.now()) cookies.delete(key)
    }
    return cookies
  }
  const store = (url: URL, cookie: Cookie) => {
    const cookies = live(url.host)
    const key = `${cookie.name};${cookie.path}`
    if (cookie.expiresAt !== undefined && cookie.expiresAt <= Date.now()) cookies.delete(key)
    else cookies.set(key, cookie)
  }

  const request = async (
    method: string,
    url: string,
    body: URLSearchParams | undefined,
    options: RequestOptions = {}
  ): Promise<BrowserResponse> => {
    const target = new URL(url)
    const headers: Record<string, string> = { ...options.headers }
    if (options.cookies !== false) {
      const cookies = [...live(target.host).values()]
        .filter((cookie) => pathMatches(cookie.path, target.pathname))
        .sort((a, b) => b.path.length - a.path.length)
      if (cookies.length > 0) headers.cookie = cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join("; ")
    }
    const response = await fetch(target, {
      method,
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout(15_000),
      ...(body === undefined ? {} : { body })
    }).catch((cause: unknown) => {
      throw new Error(`${method} ${withoutQuery(url)} failed`, { cause })
    })
    if (options.cookies !== false) {
      for (const header of response.headers.getSetCookie()) {
        const cookie = parseSetCookie(header, target.pathname, Date.now())
        if (cookie !== undefined) store(target, cookie)
      }
    }
    const location = response.headers.get("location")
    return {
      method,
      url: target.href,
      status: response.status,
      headers: response.headers,
      location: location === null ? undefined : new URL(location, target).href,
      body: await response.text()
    }
  }

  const hopOf = (response: BrowserResponse): Hop => ({
    method: response.method,
    url: response.url,
    status: response.status,
    location: response.location
  })

  /** Follows the redirects of `first` (already in `hops`). */
  const chase = async (
    first: BrowserResponse,
    firstBody: URLSearchParams | undefined,
    hops: Array<Hop>,
    options: FollowOptions
  ): Promise<Journey> => {
    const maxRedirects = options.maxRedirects ?? 20
    let response = first
    let body = firstBody
    for (let redirects = 0; isRedirect(response.status) && response.location !== undefined; redirects++) {
      const next = response.location
      if (options.stopAt?.(next) === true) return { hops, final: response, stoppedAt: next }
      if (redirects >= maxRedirects)
        throw new Error(`more than ${maxRedirects} redirects, last to ${withoutQuery(next)}`)
      const keep = (response.status === 307 || response.status === 308) && response.method === "POST"
      body = keep ? body : undefined
      response = await request(keep ? "POST" : "GET", next, body)
      hops.push(hopOf(response))
    }
    return { hops, final: response, stoppedAt: undefined }
  }

  const follow = async (url: string, options: FollowOptions = {}): Promise<Journey> => {
    const first = await request("GET", url, undefined)
    return chase(first, undefined, [hopOf(first)], options)
  }

  const authorizeAtProvider = async (startUrl: string, options: AuthorizeOptions = {}): Promise<Journey> => {
    let journey = await follow(startUrl, options)
    for (let forms = 0; journey.stoppedAt === undefined && forms < (options.maxForms ?? 4); forms++) {
      const page = journey.final
      const form = page.status === 200 ? parseForms(page.body, page.url).find((f) => f.method === "post") : undefined
      if (form === undefined) return journey
      const fields = new URLSearchParams()
      for (const input of form.inputs) {
        if (input.type === "password") fields.append(input.name, options.password ?? "password")
        else if (input.name === "login" || ["text", "email"].includes(input.type)) {
          fields.append(input.name, options.login ?? "alice")
        } else if (input.type !== "submit" && input.type !== "button") fields.append(input.name, input.value)
      }
      const response = await request("POST", form.action, fields)
      journey = await chase(response, fields, [...journey.hops, hopOf(response)], options)
    }
    return journey
  }

  return {
    get: (url, options) => request("GET", url, undefined, options),
    post: (url, form, options) => request("POST", url, new URLSearchParams(form), options),
    follow,
    authorizeAtProvider,
    cookies: (url) => [...live(new URL(url).host).values()],
    cookie: (url, name) => [...live(new URL(url).host).values()].find((cookie) => cookie.name === name),
    setCookie: (url, name, value, path = "/") => {
      store(new URL(url), {
        name,
        value,
        path,
        expiresAt: undefined,
        httpOnly: false,
        secure: false,
        sameSite: undefined
      })
    },
    clearCookies: (url) => {
      if (url === undefined) jar.clear()
      else jar.delete(new URL(url).host)
    }
  }
}
