/**
 * Real Chromium for the browser tests: Debian's `chromium` (the binary `which chromium` finds;
 * `.ci/run` installs it with apt when missing) driven by `playwright-core`, which downloads no
 * browser. Every page's console errors and uncaught exceptions are collected, so a test can assert
 * there were none, `shot` saves screenshots under `test/screenshots/` (git-ignored) in the light
 * and the dark theme, and `axe` runs axe-core (injected from the pinned npm package) in a page or
 * frame and answers its serious and critical violations.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { type Browser, type BrowserContext, chromium, type Frame, type Page } from "playwright-core"
import { repoRoot } from "./SvcProcess.ts"

/** Where the screenshots of a test run go. */
export const screenshotDir = path.join(repoRoot, "test/screenshots")

/** The chromium binary on PATH (`CHROMIUM_PATH` overrides); a clear error when there is none. */
export const chromiumPath = (): string => {
  const configured = process.env.CHROMIUM_PATH
  if (configured !== undefined && configured !== "") return configured
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim()
  } catch {
    throw new Error("no chromium on PATH: install it with `apt-get install -y chromium` (.ci/run does)")
  }
}

/** One problem a page reported. */
export interface ConsoleProblem {
  readonly page: string
  readonly kind: "console" | "pageerror"
  readonly text: string
}

/** A launched browser with one context, the problems its pages reported, and a screenshot helper. */
export interface ChromiumSession {
  readonly browser: Browser
  readonly context: BrowserContext
  /** Console errors and uncaught exceptions of pages whose URL starts with one of `origins` (all when empty). */
  readonly problems: (origins?: ReadonlyArray<string>) => ReadonlyArray<ConsoleProblem>
  /**
   * Saves full-page screenshots as `test/screenshots/<name>-light.png` and `<name>-dark.png` (the
   * page's `prefers-color-scheme` emulated; the UIs follow it unless the URL sets `theme=`), then
   * restores light; answers the paths.
   */
  readonly shot: (page: Page, name: string) => Promise<ReadonlyArray<string>>
  /**
   * axe-core's serious and critical violations in `target` (a page, or a frame such as the Connect
   * UI's iframe), in the light and the dark colour scheme (each violation tagged with its scheme).
   */
  readonly axe: (target: Page | Frame) => Promise<ReadonlyArray<AxeViolation>>
  readonly close: () => Promise<void>
}

/** One axe-core violation: the rule, its impact and the elements (CSS selectors) it found. */
export interface AxeViolation {
  readonly id: string
  readonly impact: string
  readonly help: string
  readonly targets: ReadonlyArray<string>
}

const axeSource = (): string => fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/**
 * Runs axe-core in `target`. The source is evaluated through the DevTools protocol, which the
 * pages' Content-Security-Policy (`script-src 'self'`) does not apply to; nothing is added to svc.
 */
export const runAxe = async (target: Page | Frame): Promise<ReadonlyArray<AxeViolation>> => {
  if ((await target.evaluate("typeof window.axe")) !== "object") await target.evaluate(axeSource())
  const results = (await target.evaluate(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact ?? "", help: v.help, targets: v.nodes.map((n) => String(n.target)) })))`
  )) as ReadonlyArray<AxeViolation>
  return results.filter((v) => v.impact === "serious" || v.impact === "critical")
}

/** Launches headless Chromium (one context, self-signed certificates accepted for the admin-api). */
export const launchChromium = async (): Promise<ChromiumSession> => {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
  })
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1100, height: 800 } })
  const problems: Array<ConsoleProblem> = []
  const watch = (page: Page) => {
    page.on("console", (message) => {
      if (message.type() !== "error") return
      const at = message.location().url
      problems.push({
        page: page.url(),
        kind: "console",
        text: at === "" ? message.text() : `${message.text()} (${at})`
      })
    })
    page.on("pageerror", (error) => problems.push({ page: page.url(), kind: "pageerror", text: error.message }))
  }
  context.on("page", watch)
  fs.mkdirSync(screenshotDir, { recursive: true })
  return {
    browser,
    context,
    problems: (origins = []) =>
      problems.filter((p) => origins.length === 0 || origins.some((origin) => p.page.startsWith(origin))),
    shot: async (page, name) => {
      const files: Array<string> = []
      for (const colorScheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme })
        const file = path.join(screenshotDir, `${name}-${colorScheme}.png`)
        await page.screenshot({ path: file, fullPage: true })
        files.push(file)
      }
      await page.emulateMedia({ colorScheme: "light" })
      return files
    },
    axe: async (target) => {
      const page = "page" in target && typeof target.page === "function" ? target.page() : (target as Page)
      const found: Array<AxeViolation> = []
      for (const colorScheme of ["light", "dark"] as const) {
        await page.emulateMedia({ colorScheme })
        for (const violation of await runAxe(target))
          found.push({ ...violation, id: `${violation.id} (${colorScheme})` })
      }
      await page.emulateMedia({ colorScheme: "light" })
      return found
    },
    close: () => browser.close()
  }
}
