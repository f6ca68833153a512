/**
 * Preloaded into a svc process by a test (`NODE_OPTIONS=--import`, never part of svc itself):
 * appends the URL of every module the process loads, one a line, to `$SVC_TEST_MODULE_LOG`, so a
 * test can tell what a process loads at start and what only at first use.
 */
import * as fs from "node:fs"
import { registerHooks } from "node:module"

const file = process.env.SVC_TEST_MODULE_LOG
if (file !== undefined && file !== "") {
  registerHooks({
    load: (url, context, nextLoad) => {
      fs.appendFileSync(file, `${url}\n`)
      return nextLoad(url, context)
    }
  })
}
