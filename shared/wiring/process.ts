/**
 * The one core of a Lambda instance (or of a worker-thread instance of the local stack), made from the
 * environment the function was configured with, on its first request. Function entries reach it only
 * through `lambdaHandler`; the local launcher and tests build their own cores from settings instead.
 */
import { getConfig } from '../config.ts';
import { type Core, createCore, once } from './core.ts';

export const processCore = once((): Core => createCore(getConfig()));

/**
 * A function's Lambda handler from its composition root: built on the first invocation (settings are
 * read then, once), and the same for every later one.
 */
export function lambdaHandler<Event, Context, Result>(create: (core: Core) => (event: Event, context: Context) => Promise<Result>) {
  let built: ((event: Event, context: Context) => Promise<Result>) | undefined;
  return (event: Event, context: Context): Promise<Result> => {
    built ??= create(processCore());
    return built(event, context);
  };
}
