/** The service's version: the package version, reported by health and status. */
import pkg from '../package.json' with { type: 'json' };

export const SERVICE_VERSION: string = pkg.version;
