/**
 * The `svc` executable. First the heap limits of a `svc serve` process (`Launcher.ts`): when they
 * are not yet set, Node is started again in place with them (`process.execve`: same PID, stdio
 * and signals) before anything else is loaded; then the command itself (`SvcCommand.ts`).
 */
import { launchPlan } from "./Launcher.ts"

const plan = launchPlan({ argv: process.argv, execArgv: process.execArgv, env: process.env })
// `process.execve` is missing where the OS has no execve (Windows): svc then runs with Node's sizing.
if (plan !== undefined && typeof process.execve === "function") {
  process.execve(process.execPath, [process.execPath, ...plan.args], plan.env)
}
// Not passed on to what svc itself starts (worker threads read it, they never relaunch).
delete process.env.SVC_LAUNCHED

const { run } = await import("./SvcCommand.ts")
run({ env: process.env, cwd: process.cwd() })
