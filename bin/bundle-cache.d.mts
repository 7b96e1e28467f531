/** bin/bundle-cache.mjs: the path of a kept plain-JavaScript bundle of `entry`, or undefined when none can be had. */
export function cachedBundle(entry: string, embed?: Record<string, string>): string | undefined;
