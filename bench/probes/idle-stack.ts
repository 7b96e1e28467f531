/**
 * What a local stack costs while nobody uses it: a stack started as `npm start` starts it (its own DynamoDB Local), one
 * chain made, then `SECONDS` (default 30) idle; prints the CPU the launcher (its instances' threads included) and its JVM
 * used in that time, and each of the launcher's threads that used any. Every test file's stack is idle for much of its
 * life, and so is a developer's `npm start`.
 *
 *   node --import tsx bench/probes/idle-stack.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { removeDir, startStack } from '#test/support/stack';

const SECONDS = Number(process.env.SECONDS ?? 30);

/** CPU ms of a process, or of each of its threads, from /proc (Linux). */
function cpuMs(path: string): number {
  const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const threads = (pid: number) => Object.fromEntries(readdirSync(`/proc/${pid}/task`).map((id) => [id, cpuMs(`/proc/${pid}/task/${id}/stat`)]));

const stack = await startStack({ ownDynamoDb: true });
try {
  await fetch(`${stack.url}/api/v1/chains/idle/create`, { method: 'POST' });
  await new Promise((resolve) => setTimeout(resolve, 5_000)); // the chain's pushes and the instances' first work go by
  const before = { launcher: cpuMs(`/proc/${stack.pid}/stat`), jvm: stack.dynamoPid ? cpuMs(`/proc/${stack.dynamoPid}/stat`) : 0, threads: threads(stack.pid) };
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1_000));
  const launcher = cpuMs(`/proc/${stack.pid}/stat`) - before.launcher;
  const jvm = stack.dynamoPid ? cpuMs(`/proc/${stack.dynamoPid}/stat`) - before.jvm : 0;
  console.log(
    `idle for ${SECONDS} s: the launcher ${launcher} ms of CPU (${((launcher / SECONDS / 1000) * 100).toFixed(1)} % of a core), its DynamoDB Local ${jvm} ms`,
  );
  const busy = Object.entries(threads(stack.pid))
    .map(([id, ms]) => [id, ms - (before.threads[id] ?? 0)] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1]);
  console.log(`the launcher's threads (${stack.pid} is its main thread): ${busy.map(([id, ms]) => `${id} ${ms} ms`).join(', ')}`);
} finally {
  await stack.stop();
  removeDir(stack.dataDir);
}
