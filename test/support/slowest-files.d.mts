/** test/support/slowest-files.mjs: a node:test reporter printing the ten slowest test files and the run's wall time. */
export default function slowestFiles(
  source: AsyncIterable<unknown>,
  options?: { wallMs?: number; cpuMs?: number; cpuByFile?: Record<string, number>; sharedCpu?: Record<string, number> },
): AsyncGenerator<string>;
