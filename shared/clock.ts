/**
 * Milliseconds since the epoch on a clock that never steps: the time this process (or thread) started, plus
 * the monotonic time since. For durations and deadlines inside one process: a wall clock set forward or back
 * while a request waits (an NTP correction; this project's test machine stepped 3.4 s during a run) would
 * otherwise end a wait early or late. What is stored, shared between instances or compared with DynamoDB's
 * TTL (leases, expiries) stays on the wall clock (`Date.now()`).
 *
 * Read through `globalThis.performance` at each call, so that the simulation's virtual clock (which fakes
 * `performance`, its origin at the virtual epoch) drives it as it drives `Date`.
 */
export function steadyNow(): number {
  const { performance } = globalThis;
  return performance.timeOrigin + performance.now();
}
