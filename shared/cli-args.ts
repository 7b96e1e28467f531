/**
 * The repository's commands read their arguments through this: an unknown option or a missing value is said on
 * stderr with the command's usage and ends it with `exitCode`, never as a parseArgs stack trace.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';

export function parseArgsOrExit<T extends ParseArgsConfig>(config: T, usage: string, exitCode: number): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage.trimEnd()}\n`);
    process.exit(exitCode);
  }
}
