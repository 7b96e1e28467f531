/** What the local commands (npm start, npm run keys, npm run identity) share: settings or a clear exit. */
import { ConfigError, loadConfig, type Settings } from '#shared/config';

export function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The validated settings; a bad value ends the command with the message naming it. */
export function settingsOrExit(prefix = ''): Readonly<Settings> {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(`${prefix}${error.message}`);
    throw error;
  }
}
