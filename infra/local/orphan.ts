/**
 * Stops a long-running command (`npm start`, `npm run sim`, `npm run witness`) once the process that started it is
 * gone. npm runs a script under `sh -c`: a SIGTERM to npm (or `kill %1`, which names npm's pid) stops npm and the
 * shell, and the shell does not pass it on, so the command, its JVM and its function workers kept running on their
 * ports. Checked twice a second, on a timer that keeps nothing alive.
 */
export function stopWhenOrphaned(stop: () => void, everyMs = 500): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, everyMs).unref();
}
