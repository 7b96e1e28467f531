/**
 * A deployed function's secret settings (the CDN's edge secret, the IPFS API's credential, the license key) are kept in
 * AWS Secrets Manager, not in its environment, where anyone allowed to read the function's configuration would read
 * them. SVC_SECRETS names each setting and the secret that holds it (`SVC_EDGE_SECRET=<arn> SVC_IPFS_API_AUTH=<arn>`);
 * at a cold start, before the settings are read, each named secret is fetched once (together, within
 * SECRETS_DEADLINE_MS) and becomes that setting for the life of the instance. Only the settings that are secret
 * (SECRET_SETTINGS) may be named, and one named there must not also be given in the environment.
 *
 * The local stack gives its settings directly and never sets SVC_SECRETS.
 */
import { ConfigError, SECRET_SETTINGS } from '../config.ts';
import { DependencyUnavailableError } from '../errors.ts';
import { logger } from '../log.ts';

/** How long a cold start waits for Secrets Manager: well below the functions' 29 s timeout, with room to answer. */
export const SECRETS_DEADLINE_MS = 5_000;

/** Reads one secret's string by its ARN; rejects when it cannot, or when `signal` aborts. */
export type SecretReader = (arn: string, signal: AbortSignal) => Promise<string>;

/** The settings SVC_SECRETS names, and the ARN of each one's secret. */
export function secretSources(env: NodeJS.ProcessEnv): Map<string, string> {
  const sources = new Map<string, string>();
  const text = env.SVC_SECRETS?.trim();
  if (!text) return sources;
  const problems: string[] = [];
  for (const entry of text.split(/\s+/)) {
    const cut = entry.indexOf('=');
    const name = cut > 0 ? entry.slice(0, cut) : entry;
    const arn = cut > 0 ? entry.slice(cut + 1) : '';
    if (!SECRET_SETTINGS.has(name)) problems.push(`SVC_SECRETS: '${name}' is not a secret setting (${[...SECRET_SETTINGS].join(', ')})`);
    else if (!/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:\S+$/.test(arn))
      problems.push(`SVC_SECRETS: ${name} needs the ARN of a Secrets Manager secret`);
    else if (sources.has(name)) problems.push(`SVC_SECRETS: ${name} is named twice`);
    else if (env[name]?.trim()) problems.push(`${name} is given both in the environment and in SVC_SECRETS; give it in one place`);
    else sources.set(name, arn);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return sources;
}

/**
 * Fetches every secret SVC_SECRETS names into `env` (process.env by default). Throws a ConfigError when SVC_SECRETS is
 * malformed, and a DependencyUnavailableError (503, Retry-After) when a secret cannot be read in time; the cause is
 * logged, never answered. Nothing is set unless every secret was read.
 */
export async function readSecretSettings(
  env: NodeJS.ProcessEnv = process.env,
  read: SecretReader = readFromSecretsManager,
  deadlineMs = SECRETS_DEADLINE_MS,
): Promise<void> {
  const sources = secretSources(env);
  if (sources.size === 0) return;
  const signal = AbortSignal.timeout(deadlineMs);
  // The deadline holds even for a read that does not heed its signal.
  const late = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  let values: [string, string][];
  try {
    values = await Promise.race([Promise.all([...sources].map(async ([name, arn]) => [name, await read(arn, signal)] as [string, string])), late]);
  } catch (error) {
    logger.error('could not read the secret settings from Secrets Manager', { settings: [...sources.keys()], deadline_ms: deadlineMs, error });
    throw new DependencyUnavailableError('Secrets Manager', { cause: error });
  }
  for (const [name, value] of values) env[name] = value;
}

/** The reader of a deployed function: GetSecretValue on the secret's current version, its SecretString. */
const readFromSecretsManager: SecretReader = async (arn, signal) => {
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const client = new SecretsManagerClient({ maxAttempts: 3 });
  try {
    const answer = await client.send(new GetSecretValueCommand({ SecretId: arn }), { abortSignal: signal });
    if (answer.SecretString === undefined) throw new Error(`${arn} holds no string`);
    return answer.SecretString;
  } finally {
    client.destroy();
  }
};
