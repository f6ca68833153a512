/**
 * The theme of both applications: light or dark from the URL (`theme=dark|light`), else the
 * browser's `prefers-color-scheme` (theme.css); colour and radius overrides from the URL set the
 * `--svc-*` tokens through the CSSOM, which the Content-Security-Policy allows.
 */

const colorVariables: Readonly<Record<string, string>> = {
  accent: "--svc-accent",
  "accent-text": "--svc-accent-text",
  bg: "--svc-bg",
  surface: "--svc-surface",
  text: "--svc-text",
  muted: "--svc-muted",
  border: "--svc-border"
}

/**
 * Applies the theme in the URL: `theme=dark|light`, colour overrides (`accent`, `accent-text`, `bg`,
 * `surface`, `text`, `muted`, `border`; any CSS colour the browser accepts) and `radius` (0–24 px).
 * Anything else is ignored.
 */
export const applyTheme = (search: string): void => {
  const params = new URLSearchParams(search)
  const root = document.documentElement
  const theme = params.get("theme")
  if (theme === "dark" || theme === "light") root.dataset.theme = theme
  for (const [name, variable] of Object.entries(colorVariables)) {
    const value = params.get(name)
    if (value !== null && value.length <= 64 && CSS.supports("color", value)) root.style.setProperty(variable, value)
  }
  const radius = params.get("radius")
  if (radius !== null && /^(?:[0-9]|1[0-9]|2[0-4])$/.test(radius)) root.style.setProperty("--svc-radius", `${radius}px`)
}
