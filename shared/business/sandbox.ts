/**
 * Contracts run in QuickJS compiled to WebAssembly (quickjs-emscripten): a separate JavaScript engine
 * with its own heap, no I/O and no host objects — no require, process, fetch or timers exist there.
 * Each run gets a fresh runtime with a memory limit, a stack limit and a CPU-time limit; anything that
 * exceeds one, throws, or returns something that is not JSON ends in ContractExecutionError (422).
 *
 * The WebAssembly binary (500 KB) is read from `quickjs.wasm` beside the running bundle (the cloud
 * stack copies it there; inlined as base64 it would add 1.1 MB of JavaScript to parse at every cold
 * start), or else from the installed package.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import baseVariant from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from 'quickjs-emscripten-core';
import { UnprocessableError } from '../errors.ts';
import { canonicalJson } from '../ledger/hashing.ts';

import { QUICKJS_WASM_FILE, QUICKJS_WASM_MODULE } from './sandbox-wasm.ts';

export interface SandboxLimits {
  /**
   * CPU time one run may take, in milliseconds: the thread's own (`threadCpuMs`), which QuickJS checks as it executes.
   * A run that waits for the CPU (a busy machine, a worker at nice 19, Lambda's share of a core) is not charged for it.
   */
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  /** Largest result, as JSON text. */
  maxResultBytes: number;
}

export class ContractExecutionError extends UnprocessableError {}

function wasmBinary(): ArrayBuffer {
  const beside = fileURLToPath(new URL(`./${QUICKJS_WASM_FILE}`, import.meta.url));
  const path = existsSync(beside) ? beside : createRequire(import.meta.url).resolve(QUICKJS_WASM_MODULE);
  const bytes = readFileSync(path);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

const threadCpuUsage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.bind(process);
/**
 * The CPU time this thread has used, in milliseconds: a contract's limit is CPU time (the contract's rule). Where Node
 * cannot tell a thread's own (before 23.9 and 22.19) the wall clock stands in.
 */
export const threadCpuMs: () => number = threadCpuUsage
  ? () => {
      const { user, system } = threadCpuUsage();
      return (user + system) / 1000;
    }
  : () => performance.now();

let engine: Promise<QuickJSWASMModule> | undefined;
const quickjs = () => (engine ??= newQuickJSWASMModuleFromVariant(newVariant(baseVariant, { wasmBinary: async () => wasmBinary() })));

/**
 * What a run sees of time and chance, fixed by its input so that a run can be replayed: `Date.now()` and
 * `new Date()` are the context's `timestamp` (seconds; the epoch when absent), `Math.random()` is a
 * generator (sfc32) seeded with the SHA-256 of the run's canonical input; SharedArrayBuffer and Atomics
 * are removed (nothing to share, no clocks to build from them).
 */
function determinism(seedHex: string, nowMs: number): string {
  const words = [0, 1, 2, 3].map((i) => Number.parseInt(seedHex.slice(i * 8, i * 8 + 8), 16) >>> 0);
  return `(() => {
  let [a, b, c, d] = ${JSON.stringify(words)};
  const random = function random() {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0; a = b ^ (b >>> 9); b = (c + (c << 3)) | 0; c = (c << 21) | (c >>> 11); d = (d + 1) | 0;
    t = (t + d) | 0; c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  Object.defineProperty(Math, 'random', { value: random, writable: false, configurable: false });
  const NOW = ${JSON.stringify(nowMs)};
  // Date is a function that makes real Dates at the fixed time, not a subclass of the real one: a subclass left the
  // real Date one prototype away (Object.getPrototypeOf(Date).now() was the real time, 2026-12-06 red team). The
  // real Date's prototype names this one as its constructor, so no path leads back to the real one.
  const RealDate = globalThis.Date;
  const construct = Reflect.construct;
  const fixed = { value: undefined, writable: false, enumerable: false, configurable: false };
  function Date(...args) {
    if (new.target === undefined) return construct(RealDate, [NOW]).toString();
    return construct(RealDate, args.length === 0 ? [NOW] : args, new.target);
  }
  Object.defineProperty(Date, 'prototype', { ...fixed, value: RealDate.prototype });
  Object.defineProperty(Date, 'length', { ...fixed, value: 7 });
  Object.defineProperty(Date, 'now', { ...fixed, value: function now() { return NOW; } });
  Object.defineProperty(Date, 'UTC', { ...fixed, value: RealDate.UTC });
  Object.defineProperty(Date, 'parse', { ...fixed, value: RealDate.parse });
  Object.defineProperty(RealDate.prototype, 'constructor', { ...fixed, value: Date });
  Object.defineProperty(globalThis, 'Date', { ...fixed, value: Date });
  // The result is written with the JSON the run was given: a contract may replace the global one for itself.
  Object.defineProperty(globalThis, '__json', { ...fixed, value: Object.freeze({ parse: JSON.parse, stringify: JSON.stringify }) });
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  // The runtime's own errors (out of memory, stack overflow) are InternalErrors: a contract does not make them by name.
  delete globalThis.InternalError;
})();`;
}

/** Evaluates `source`, then `entry` (an expression yielding a string); answers that string. */
async function evaluate(source: string, entry: string, input: string | null, limits: SandboxLimits, prelude = determinism('0'.repeat(32), 0)): Promise<string> {
  const module = await quickjs();
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(limits.stackBytes);
  // Whether the run was stopped for its time, as the runtime knows it: an error's message alone is the contract's to
  // choose (one that threw {message: 'interrupted'} was told it ran out of CPU time, in 2 ms; red team).
  const startedMs = threadCpuMs();
  let interrupted = false;
  runtime.setInterruptHandler(() => (interrupted ||= threadCpuMs() - startedMs > limits.timeoutMs));
  const context = runtime.newContext();
  try {
    if (input !== null) {
      const handle = context.newString(input);
      context.setProp(context.global, '__input', handle);
      handle.dispose();
    }
    for (const [code, name] of [
      [prelude, 'prelude.js'],
      [source, 'contract.js'],
      [entry, 'entry.js'],
    ] as const) {
      const result = context.evalCode(code, name);
      if (result.error) {
        const error = context.dump(result.error) as { name?: string; message?: string } | string;
        result.error.dispose();
        throw new ContractExecutionError(describe(error, interrupted));
      }
      if (name === 'entry.js') {
        const value = context.dump(result.value);
        result.value.dispose();
        if (typeof value !== 'string') throw new ContractExecutionError('the contract did not return JSON');
        return value;
      }
      result.value.dispose();
    }
    throw new Error('unreachable');
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

/**
 * What a failed run is told. The sandbox's own limits speak in its words only when the runtime raised them: an
 * interrupt the handler made (`interrupted`), an InternalError the runtime threw for memory or stack. A contract cannot
 * construct InternalError by name (the prelude removes it); it can still throw a plain object named so (its dump reads
 * as one), which is told as the memory or stack limit: its own run's message, nothing the service decides by.
 */
function describe(error: { name?: string; message?: string } | string, interrupted: boolean): string {
  if (typeof error === 'string') return `the contract threw: ${error}`;
  const raised = error.name === 'InternalError';
  if (interrupted && error.message === 'interrupted') return 'the contract ran out of CPU time';
  if (raised && error.message === 'out of memory') return 'the contract ran out of memory';
  if (raised && error.message === 'stack overflow') return 'the contract overflowed its stack';
  return `the contract threw ${error.name ?? 'an error'}: ${error.message ?? ''}`.trim();
}

/** Checks that `source` evaluates within the limits and defines `function execute(event, context)`. */
export async function checkContract(source: string, limits: SandboxLimits): Promise<void> {
  const kind = await evaluate(source, 'typeof execute', null, limits);
  if (kind !== 'function') throw new ContractExecutionError('the implementation must define function execute(event, context)');
}

/** Runs `execute(event, context)`; answers its JSON result (undefined becomes null). */
export async function runContract(source: string, event: unknown, context: unknown, limits: SandboxLimits): Promise<unknown> {
  const entry =
    '(() => { const input = __json.parse(__input); const out = execute(input.event, input.context); ' +
    // No event loop runs here: a Promise would never settle, and JSON.stringify would make it `{}`.
    "if (out !== null && typeof out === 'object' && typeof out.then === 'function') throw new TypeError('execute must return a value, not a Promise (there is no I/O to wait for)'); " +
    'const text = __json.stringify(out === undefined ? null : out); ' +
    "if (typeof text !== 'string') throw new TypeError('execute returned something that is not JSON'); return text; })()";
  const input = { event, context };
  const seed = createHash('sha256').update(canonicalJson(input)).digest('hex');
  const timestamp = (context as { timestamp?: unknown } | null)?.timestamp;
  const nowMs = typeof timestamp === 'number' && Number.isFinite(timestamp) ? Math.round(timestamp * 1000) : 0;
  const text = await evaluate(source, entry, JSON.stringify(input), limits, determinism(seed, nowMs));
  if (Buffer.byteLength(text) > limits.maxResultBytes) {
    throw new ContractExecutionError(`the contract's result is larger than ${limits.maxResultBytes} bytes`);
  }
  try {
    return JSON.parse(text);
  } catch {
    // Only a contract that reached past the sandbox's own JSON could send this: its error, not the service's.
    throw new ContractExecutionError('the contract did not return JSON');
  }
}
