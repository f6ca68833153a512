/** The version of this build, reported by `/healthz`, `--version` and telemetry. */
export const version = "0.1.0"
