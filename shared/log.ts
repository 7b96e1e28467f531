/**
 * Structured JSON logs, one object per line on stderr. Fields are data, never interpolated into the
 * message. Keys and secrets are never passed here.
 */
import { getConfig } from './config.ts';

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function threshold(): number {
  try {
    return ORDER[getConfig().SVC_LOG_LEVEL];
  } catch {
    return ORDER.info;
  }
}

function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const cause = (error as { cause?: unknown }).cause;
  return {
    error: { name: error.name, message: error.message, stack: error.stack },
    ...(cause !== undefined ? { cause: errorFields(cause).error } : {}),
  };
}

function write(level: Level, message: string, fields?: Record<string, unknown>): void {
  if (ORDER[level] < threshold()) return;
  const { error, ...rest } = fields ?? {};
  const line = {
    level,
    time: new Date().toISOString(),
    message,
    ...rest,
    ...(error !== undefined ? errorFields(error) : {}),
  };
  process.stderr.write(`${JSON.stringify(line)}\n`);
}

export const logger = {
  debug: (message: string, fields?: Record<string, unknown>) => write('debug', message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
};
