/**
 * Real Chromium for the browser tests: Debian's `chromium` (the binary `which chromium` finds;
 * `.ci/run` installs it with apt when missing) driven by `playwright-core`, which downloads no
 * browser. Every page's console errors and uncaught exceptions are collected, so a test can assert
 * there were none, and `shot` saves screenshots under `test/screenshots/` (git-ignored).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
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
  /** Saves a full-page screenshot as `test/screenshots/<name>.png`; answers the path. */
  readonly shot: (page: Page, name: string) => Promise<string>
  readonly close: () => Promise<void>
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
      const file = path.join(screenshotDir, `${name}.png`)
      await page.screenshot({ path: file, fullPage: true })
      return file
    },
    close: () => browser.close()
  }
}
