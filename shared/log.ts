/**
 * Structured JSON logs (pino), one object per line on stderr: `level`, `time`, `message`, then fields.
 * Fields are data, never interpolated into the message. Keys and secrets are never passed here, and
 * the usual places a key could hide are redacted as a second line of defence.
 */
import pino from 'pino';
import { getConfig } from './config.ts';

function level(): string {
  try {
    return getConfig().SVC_LOG_LEVEL;
  } catch {
    return 'info';
  }
}

let instance: pino.Logger | undefined;

function base(): pino.Logger {
  instance ??= pino(
    {
      level: level(),
      messageKey: 'message',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      errorKey: 'error',
      redact: { paths: ['key', 'api_key', 'apiKey', 'headers["x-api-key"]', '*.headers["x-api-key"]'], censor: '[redacted]' },
    },
    pino.destination({ dest: 2, sync: true }),
  );
  return instance;
}

type Fields = Record<string, unknown>;

function write(method: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Fields): void {
  const { error, ...rest } = fields ?? {};
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  base()[method]({ ...rest, ...(error !== undefined ? { error } : {}), ...(cause !== undefined ? { cause } : {}) }, message);
}

export const logger = {
  debug: (message: string, fields?: Fields) => write('debug', message, fields),
  info: (message: string, fields?: Fields) => write('info', message, fields),
  warn: (message: string, fields?: Fields) => write('warn', message, fields),
  error: (message: string, fields?: Fields) => write('error', message, fields),
};
