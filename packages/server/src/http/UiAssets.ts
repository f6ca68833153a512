/**
 * The built browser bundles (`packages/server/ui/dist/<app>/`, made by `npm run build:ui`, which
 * `npm start` and `npm test` run first) served from memory: `index.html` with `Cache-Control:
 * no-cache` and a strict Content-Security-Policy (scripts, styles and fetches from the page's own
 * origin only, no inline script or style element), content-hashed files under `assets/` as
 * `immutable` for a year. A bundle that was not built answers a plain page saying how to build it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpServerResponse } from "effect/http"
import { htmlPage } from "./BrowserPages.ts"

/** The built bundles' folder. */
export const uiDistDir = fileURLToPath(new URL("../../ui/dist/", import.meta.url))

/** The two browser applications. */
export type UiApp = "connect" | "admin"

const contentTypes: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".json": "application/json"
}

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
}

/** A bundle read into memory: `index.html` and every file under `assets/`, by path relative to the bundle. */
export interface UiBundle {
  readonly app: UiApp
  readonly index: Uint8Array | undefined
  readonly assets: ReadonlyMap<string, Asset>
}

/** Reads `dist/<app>/` (absent or empty: a bundle without index). */
export const loadBundle = (app: UiApp, distDir: string = uiDistDir): UiBundle => {
  const root = path.join(distDir, app)
  const assets = new Map<string, Asset>()
  let index: Uint8Array | undefined
  try {
    index = fs.readFileSync(path.join(root, "index.html"))
    for (const entry of fs.readdirSync(path.join(root, "assets"), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile()) continue
      const file = path.join(entry.parentPath, entry.name)
      const type = contentTypes[path.extname(entry.name)]
      if (type === undefined) continue
      assets.set(path.relative(root, file).split(path.sep).join("/"), {
        body: fs.readFileSync(file),
        contentType: type
      })
    }
  } catch {
    // Not built (or built without assets): index stays as read, the page below explains.
  }
  return { app, index, assets }
}

/**
 * The Content-Security-Policy of a UI page: everything from the page's own origin, nothing
 * inline, no plugins, images also from https URLs (connector logos), forms posting only to the
 * origin, framing only by `frameAncestors`
 * (`'none'` when empty).
 */
export const uiContentSecurityPolicy = (frameAncestors: ReadonlyArray<string>): string =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: https:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
    `frame-ancestors ${frameAncestors.length === 0 ? "'none'" : frameAncestors.join(" ")}`
  ].join("; ")

const uiHeaders = {
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff"
}

/** The page of a bundle: `no-cache` (revalidated on every load, so a new build is picked up), strict CSP. */
export const indexResponse = (
  bundle: UiBundle,
  frameAncestors: ReadonlyArray<string>
): HttpServerResponse.HttpServerResponse => {
  if (bundle.index === undefined) {
    return htmlPage(
      503,
      "User interface not built",
      `The ${bundle.app} UI has not been built. Run "npm run build:ui" (npm start does it) and restart svc.`
    )
  }
  return HttpServerResponse.uint8Array(bundle.index, {
    status: 200,
    contentType: "text/html; charset=utf-8",
    headers: {
      ...uiHeaders,
      "Cache-Control": "no-cache",
      "Content-Security-Policy": uiContentSecurityPolicy(frameAncestors),
      // The CSP's frame-ancestors decides framing; an X-Frame-Options header would override it.
      ...(frameAncestors.length === 0 ? { "X-Frame-Options": "DENY" } : {})
    }
  })
}

/** A content-hashed file of a bundle, cached for a year; undefined when there is none at `relative`. */
export const assetResponse = (
  bundle: UiBundle,
  relative: string
): HttpServerResponse.HttpServerResponse | undefined => {
  const asset = bundle.assets.get(relative)
  if (asset === undefined) return undefined
  return HttpServerResponse.uint8Array(asset.body, {
    status: 200,
    contentType: asset.contentType,
    headers: { ...uiHeaders, "Cache-Control": "public, max-age=31536000, immutable" }
  })
}

/** The path of a request URL below `prefix` (`/connect/assets/x.js` → `assets/x.js`), query removed. */
export const pathBelow = (url: string, prefix: string): string | undefined => {
  const at = url.indexOf("?")
  const pathname = at === -1 ? url : url.slice(0, at)
  if (!pathname.startsWith(prefix)) return undefined
  return pathname.slice(prefix.length)
}
