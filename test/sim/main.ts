/**
 * `npm run simulate -- [--profile calm|faults|chaos] --seed N [--trace]`: one run, its invariants, and with
 * --trace every request, fault and answer in order. The same seed replays the same run.
 * `npm run simulate -- [--profile …] --seeds FROM-TO`: many runs (a soak); each failing seed is printed with
 * the command that replays it. `--late-retries even`: only even seeds end with the late retries (every keyed
 * append sent again hours later), a fifth less time a seed for the others.
 * `npm run simulate -- --runs PROFILE:FROM-TO[:even] --runs …`: several soaks one after the other in this one
 * process, each with its own summary line (the tests' way: a fresh process runs its first tens of seeds up to twice
 * as slowly, JIT and heap still warming up; a run's result does not depend on what ran before it in the process).
 *
 * Runs run on the Node that Lambda runs the functions on (24, infra/sim/runtime.ts): on another Node, the command checks
 * its arguments, then runs itself again on that one (the npm registry's, which `npm ci` installs), and says so. A seed's
 * run is then the same whichever Node typed the command, and costs a third less CPU than on Node 20.
 * `LEDGER_SIMULATE_ON_THIS_NODE=1` keeps it on the Node that started it.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '#infra/bundling';
import { chooseNode, LAMBDA_NODE_MAJOR } from '#infra/sim/runtime';
import { parseArgsOrExit } from '#shared/cli-args';
import { PROFILES, profile } from './profiles.ts';
import { runScenario } from './scenario.ts';

const USAGE = `Usage:
  npm run simulate -- [--profile NAME] --seed N [--trace]       one run, its invariants (--trace: every request, fault and answer)
  npm run simulate -- [--profile NAME] [--seeds FROM-TO]        a soak (default 1-100); each failing seed with its replay command
  npm run simulate -- --runs NAME:FROM-TO[:even] [--runs …]     several soaks in this one process, one summary line each
Options:
  --profile NAME        ${Object.keys(PROFILES).join(', ')} (default faults)
  --late-retries WHICH  all (default) or even: which seeds end with the late retries
`;

/** A mistake in the arguments: said with the usage, exit 2, no stack trace. */
function refuse(message: string): never {
  process.stderr.write(`${message}\n\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgsOrExit(
  {
    args: process.argv.slice(2),
    options: {
      profile: { type: 'string', default: 'faults' },
      seed: { type: 'string' },
      seeds: { type: 'string' },
      trace: { type: 'boolean', default: false },
      'late-retries': { type: 'string', default: 'all' },
      runs: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  },
  USAGE,
  2,
);
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
/** The profile's options for a seed: with late retries 'even', only even seeds end with late retries (a shorter soak). */
const optionsFor = (name: string, late: string, seed: number) => {
  if (late !== 'all' && late !== 'even') throw new RangeError(`--late-retries takes all or even, not '${late}'`);
  const options = profile(name);
  return { ...options, lateRetries: options.lateRetries && (late === 'all' || seed % 2 === 0) };
};
const replay = (name: string, late: string, seed: number) =>
  `npm run simulate -- --profile ${name} --seed ${seed}${late === 'all' ? '' : ` --late-retries ${late}`} --trace`;

/** `check()`'s answer, or the usage with its message when it throws: arguments are checked before anything runs. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    return refuse((error as Error).message);
  }
}

/**
 * Runs this command again on Lambda's Node when this one is another, once the arguments were found good; exits with
 * its code. Where that Node cannot be had, says so and runs here.
 */
function onLambdasNode(): void {
  if (process.versions.node.split('.')[0] === String(LAMBDA_NODE_MAJOR) || process.env.LEDGER_SIMULATE_ON_THIS_NODE === '1') return;
  let node: string;
  try {
    const chosen = chooseNode(LAMBDA_NODE_MAJOR, { say: (line) => process.stderr.write(`${line}\n`) });
    node = chosen.path;
    process.stderr.write(`Running on Lambda's Node, ${chosen.version} (this is ${process.version})\n`);
  } catch (error) {
    process.stderr.write(`Running on Node ${process.version}, not Lambda's ${LAMBDA_NODE_MAJOR}: ${(error as Error).message}\n`);
    return;
  }
  const run = spawnSync(node, [join(ROOT, 'bin', 'run.mjs'), process.argv[1]!, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

if (values.seed !== undefined) {
  const seed = Number(values.seed);
  if (!Number.isSafeInteger(seed) || seed < 0) refuse(`--seed takes a whole number, not '${values.seed}'`);
  const options = checked(() => optionsFor(values.profile!, values['late-retries']!, seed));
  onLambdasNode();
  const result = await runScenario(seed, { ...options, trace: values.trace });
  if (values.trace) for (const line of result.trace) process.stdout.write(`${line}\n`);
  process.stdout.write(
    `seed ${seed} (${values.profile}): ${result.blocks} blocks, ${result.acked} acknowledged, ${result.refused} refused, ${result.unknown} unknown; ${result.requests} requests, ${result.throttled} throttled; ${result.elapsedMs} ms of virtual time\n`,
  );
  for (const problem of result.problems) process.stdout.write(`  PROBLEM: ${problem}\n`);
  process.exit(result.problems.length ? 1 : 0);
}

interface Soak {
  name: string;
  from: number;
  to: number;
  late: string;
}

/** A soak as `--runs` (or `--profile`, `--seeds`, `--late-retries`) names it, checked. */
function soakOf(group: string, given = true): Soak {
  const [name, seeds, late = 'all', ...rest] = group.split(':');
  if (!name || !seeds || rest.length > 0 || (given && late !== 'all' && late !== 'even'))
    throw new RangeError(`--runs takes PROFILE:FROM-TO[:even], not '${group}'`);
  const [from, to] = seeds.split('-').map(Number) as [number, number];
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && to >= from)) throw new RangeError(`--seeds takes FROM-TO, not '${seeds}'`);
  optionsFor(name, late, from);
  return { name, from, to, late };
}

/** Runs a soak's seeds; prints each failing seed and a summary line; answers how many failed. */
async function soak({ name, from, to, late }: Soak): Promise<number> {
  const started = Date.now();
  let failing = 0;
  for (let seed = from; seed <= to; seed += 1) {
    const result = await runScenario(seed, optionsFor(name, late, seed));
    if (result.problems.length === 0) continue;
    failing += 1;
    process.stdout.write(`seed ${seed}: ${result.problems.join(' | ')}\n  replay: ${replay(name, late, seed)}\n`);
  }
  process.stdout.write(`${to - from + 1} seeds of '${name}', ${failing} failing, ${Math.round((Date.now() - started) / (to - from + 1))} ms a seed\n`);
  return failing;
}

const soaks = checked(
  () => values.runs?.map((group) => soakOf(group)) ?? [soakOf(`${values.profile}:${values.seeds ?? '1-100'}:${values['late-retries']}`, false)],
);
onLambdasNode();
let failing = 0;
for (const planned of soaks) failing += await soak(planned);
process.exit(failing ? 1 : 0);
