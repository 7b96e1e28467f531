/**
 * Every setting of the service, validated with zod once at start. A bad value stops the start with a
 * message naming the setting; nothing reads `process.env` anywhere else.
 */
import * as z from 'zod';
import { parseWitnesses } from './tlog/witness-config.ts';
import { DEFAULT_MAX_READ_ITEMS } from './read-allowance.ts';

const port = z.coerce.number().int().min(1).max(65535);
const positiveInt = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const tableName = z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'must be 3-255 of A-Z a-z 0-9 _ . -');

/** The settings, each with its default; names are the environment variables. */
export const settingsSchema = z.object({
  SVC_ENV: z.enum(['development', 'test', 'production']).default('development'),
  // Which function group a cloud function is (set by the stack; a label for logs and tools, read by nothing else).
  SVC_FUNCTION_GROUP: z.string().min(1).optional(),
  SVC_HOST: z.string().min(1).default('127.0.0.1'),
  SVC_PORT: port.default(2661),
  SVC_DATA_DIR: z.string().min(1).default('.data'),
  SVC_DYNAMODB_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  SVC_DYNAMODB_LOCAL_PORT: port.optional(),
  // The access key id requests to SVC_DYNAMODB_ENDPOINT are signed with (DynamoDB Local keeps one database per access
  // key id): the launcher sets it for its functions from the data dir's key; unset, the environment's credentials, else `local`.
  SVC_DYNAMODB_ACCESS_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9]{1,128}$/, 'must be 1 to 128 letters and digits')
    .optional(),
  SVC_AWS_REGION: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must look like us-east-1')
    .default('us-east-1'),
  SVC_LEDGER_TABLE: tableName.default('ledger'),
  // One DynamoDB request attempt that has not answered by then fails and is retried (3 attempts in all).
  SVC_DYNAMODB_ATTEMPT_TIMEOUT_MS: positiveInt(100, 60_000).default(5_000),
  SVC_APPEND_MAX_ATTEMPTS: positiveInt(1, 50).default(8),
  // Most blocks one round of a chain commits (one conditional write of its head; their records follow).
  SVC_APPEND_BATCH_MAX: positiveInt(1, 1000).default(256),
  // Most partitions a busy chain's pending appends spread over (a chain starts with one and doubles while
  // leaders find many waiting; each is one query per combining round).
  SVC_APPEND_PENDING_SHARDS: positiveInt(1, 64).default(32),
  // How old a pending append must be before a leader seals it (writes still on their way would land below the cursor).
  SVC_APPEND_SETTLE_MS: z.coerce.number().int().min(0).max(1_000).default(10),
  // A leader whose small round served at least this many other instances, once its records are written, waits a round before it reads again (0: at once).
  SVC_APPEND_GATHER_SIBLINGS: z.coerce.number().int().min(0).max(1_000).default(2),
  // How long a leader goes on with more rounds while appends wait, before it answers its own caller.
  SVC_APPEND_MAX_LEAD_MS: z.coerce.number().int().min(0).max(5_000).default(200),
  SVC_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  // The local stack: each function as a pool of single-request instances (as Lambda runs), or all in one process.
  SVC_LOCAL_RUNTIME: z.enum(['instances', 'single-process']).default('instances'),
  SVC_LOCAL_MAX_INSTANCES: positiveInt(1, 256).default(10),
  // An instance idle this long is stopped, as Lambda reclaims idle instances; its next request is a cold start.
  SVC_LOCAL_IDLE_MS: positiveInt(100, 3_600_000).default(120_000),
  // The local stack runs the sweep of unwritten rounds this often (the cloud stack: an hourly EventBridge rule); 0: never.
  SVC_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(3_600_000),
  SVC_DYNAMODB_IN_MEMORY: bool.default(false),
  SVC_DYNAMODB_LOCAL_JIT: z.enum(['quick', 'full']).default('quick'),
  // Set by the launcher when it runs DynamoDB Local on disk: where acknowledged writes are journaled.
  SVC_LOCAL_JOURNAL_DIR: z.string().min(1).optional(),
  // The bench's capacity model: each process writes what its DynamoDB requests cost, per partition, here.
  SVC_CAPACITY_REPORT_DIR: z.string().min(1).optional(),
  SVC_REGISTRY_TABLE: tableName.default('registry'),
  SVC_RATE_LIMIT_TABLE: tableName.default('ratelimits'),
  SVC_CONNECTIONS_TABLE: tableName.default('connections'),
  SVC_IPFS_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  SVC_IPFS_API_AUTH: z.string().optional(),
  SVC_IPFS_PORT: port.optional(),
  SVC_IPFS_TIMEOUT_MS: positiveInt(100, 120_000).default(10_000),
  SVC_OFFCHAIN_THRESHOLD_BYTES: positiveInt(1, 300_000).default(65_536),
  SVC_KMS_KEY_ID: z.string().min(1).optional(),
  SVC_VALIDATOR_IDENTITY_PATH: z.string().min(1).optional(),
  SVC_IDENTITY_STORE: z.enum(['file', 'registry']).default('file'),
  // The local launcher with no identity file: sign with keys for this run only (tests, demos) instead of making the file.
  SVC_TEMPORARY_IDENTITY: bool.default(false),
  SVC_SUBJECT_KEY_STORE: z.enum(['file', 'registry']).default('file'),
  SVC_LICENSE_KEY: z.string().min(1).optional(),
  // The C2SP checkpoints' key name and origin prefix (a chain's origin is `<this>/<chain>`); unset: derived from the node id.
  SVC_TLOG_ORIGIN: z
    .string()
    .regex(/^[^\s+]{1,200}$/, 'must be 1-200 characters without spaces or "+" (a schema-less URL such as ledger.example.com)')
    .refine((v) => !v.endsWith('/'), 'must not end in "/"')
    .optional(),
  // Witnesses of the checkpoints (C2SP tlog-witness): `<cosigner vkey>=<url>` entries, commas or spaces between them.
  SVC_WITNESSES: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      try {
        parseWitnesses(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  SVC_WITNESS_INTERVAL_MS: positiveInt(0, 3_600_000).default(1_000),
  SVC_WITNESS_TIMEOUT_MS: positiveInt(100, 30_000).default(3_000),
  SVC_PEER_TIMEOUT_MS: positiveInt(100, 30_000).default(3_000),
  // Checks every success answer against its route's declared schema, answering 500 when one drifts (the tests turn it on).
  SVC_CHECK_RESPONSES: bool.default(false),
  SVC_METRICS_BACKEND: z.enum(['memory', 'dynamodb']).default('memory'),
  SVC_METRICS_FLUSH_MS: positiveInt(0, 60_000).default(5_000),
  // Per-request CloudWatch metrics as embedded metric format lines on stdout (Powertools Metrics), in this namespace; empty: none.
  SVC_CLOUDWATCH_METRICS_NAMESPACE: z
    .string()
    .regex(/^$|^[A-Za-z0-9._/#:-]{1,255}$/, 'a CloudWatch namespace: letters, digits and . _ / # : - (at most 255)')
    .default(''),
  SVC_WS_MANAGEMENT_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  SVC_WS_PUBLIC_URL: z.url({ protocol: /^wss?$/ }).optional(),
  // One WebSocket connection: most subscriptions, and most messages per second (past them: an error reply).
  SVC_WS_MAX_SUBSCRIPTIONS: positiveInt(1, 10_000).default(50),
  SVC_WS_MESSAGES_PER_SECOND: positiveInt(1, 10_000).default(20),
  SVC_WS_CONNECTIONS_PER_KEY: positiveInt(1, 100_000).default(100),
  // Pushes (block_added and event messages) all of a key's connections receive together in a minute; past it they are told once a batch. 0: no limit.
  SVC_WS_PUSHES_PER_MINUTE: positiveInt(0, 100_000_000).default(60_000),
  SVC_WS_CONNECTION_TTL_SECONDS: positiveInt(60, 86_400).default(7_800),
  SVC_CONTRACT_TIMEOUT_MS: positiveInt(10, 30_000).default(1_000),
  SVC_CONTRACT_MEMORY_BYTES: positiveInt(1024 * 1024, 512 * 1024 * 1024).default(64 * 1024 * 1024),
  // Contract runs at once across the whole service, and runs that may wait for a slot; past that, 429
  // (shared/business/contract-admission.ts: one registry record admits every run, whichever instance serves it).
  SVC_CONTRACT_WORKERS: positiveInt(1, 64).default(8),
  SVC_CONTRACT_QUEUE: positiveInt(0, 256).default(16),
  SVC_CONTRACT_STACK_BYTES: positiveInt(16 * 1024, 128 * 1024).default(128 * 1024),
  SVC_MASTER_KEY_FILE: z.string().min(1).optional(),
  SVC_AUTH_ENABLED: bool.default(false),
  // The chains' C2SP logs (/tlog: checkpoints, hash tiles, entry bundles of block hashes) for anyone, no key: hash-level facts, as any reader's; a CDN may then keep them.
  SVC_TLOG_PUBLIC: bool.default(false),
  API_KEY_NAME: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name (letters, digits, hyphens)')
    .default('X-API-Key'),
  SVC_ADMIN_API_KEY: z.string().min(24, 'must be at least 24 characters').optional(),
  SVC_AUTH_CACHE_SECONDS: positiveInt(0, 300).default(10),
  // The cloud stack's CDN sends it in X-Ledger-Edge: a request carrying it is counted by the viewer's address CloudFront names.
  SVC_EDGE_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  // Every HTTP request must come through the CDN (carry SVC_EDGE_SECRET in X-Ledger-Edge); one straight to the API is 403.
  SVC_EDGE_ONLY: bool.default(false),
  // The deployed functions' secret settings, read from Secrets Manager at a cold start (shared/wiring/secrets.ts): NAME=<secret ARN>, space-separated.
  SVC_SECRETS: z
    .string()
    .regex(/^[A-Z_]+=\S+(\s+[A-Z_]+=\S+)*$/, 'must be NAME=<secret ARN> entries separated by spaces')
    .optional(),
  // The cloud stack's SecretsRevision: the service does not read it; changed, a deploy starts every function afresh, to read its secrets again.
  SVC_SECRETS_REVISION: z.string().optional(),
  // Bytes an instance keeps of written records, segments, full tiles and fixed-size evidence between requests (they never change); 0: none.
  SVC_READ_CACHE_BYTES: positiveInt(0, 2 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  SVC_RATE_LIMIT_RPM: positiveInt(0, 1_000_000).default(100),
  SVC_RATE_LIMIT_BACKEND: z.enum(['memory', 'dynamodb']).default('memory'),
  // Guessing keys: a source IP that presents this many unknown keys in a minute gets 429 until the minute ends.
  SVC_AUTH_FAILURES_PER_MINUTE: positiveInt(0, 1_000_000).default(20),
  SVC_MAX_BODY_BYTES: positiveInt(1, 6 * 1024 * 1024).default(5 * 1024 * 1024),
  // Items one request may read from DynamoDB (shared/read-allowance.ts); past it the request is 422.
  SVC_MAX_READ_ITEMS: positiveInt(100, 1_000_000).default(DEFAULT_MAX_READ_ITEMS),
  SVC_CORS_ORIGINS: z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^(\*|https?:\/\/[^\s,/]+)$/, 'each origin must be * or scheme://host[:port]'))),
});

/** Rules across settings: production must name its CORS origins explicitly (docs/rules.md, "Keys and limits"). */
const checkedSchema = settingsSchema.superRefine((settings, ctx) => {
  if (settings.SVC_ENV === 'production' && settings.SVC_CORS_ORIGINS.length === 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['SVC_CORS_ORIGINS'],
      message: 'must list the allowed origins when SVC_ENV=production (e.g. https://app.example.com)',
    });
  }
  if (settings.SVC_EDGE_ONLY && !settings.SVC_EDGE_SECRET) {
    ctx.addIssue({ code: 'custom', path: ['SVC_EDGE_ONLY'], message: 'needs SVC_EDGE_SECRET: the value by which a request is known to come through the CDN' });
  }
});

export type Settings = z.infer<typeof settingsSchema>;

/** Settings whose values are never echoed in messages; the only ones SVC_SECRETS may name. */
export const SECRET_SETTINGS: ReadonlySet<string> = new Set([
  'SVC_ADMIN_API_KEY',
  'SVC_IPFS_API_AUTH',
  'SVC_LICENSE_KEY',
  'SVC_DYNAMODB_ACCESS_KEY_ID',
  'SVC_EDGE_SECRET',
]);

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
    this.name = 'ConfigError';
  }
}

/**
 * Reads and validates the settings from an environment. Empty strings count as unset, so
 * `SVC_PORT= npm start` means "the default", as a user would expect.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Settings> {
  const input = givenSettings(env);
  if (input.SVC_AWS_REGION === undefined && env.AWS_REGION) input.SVC_AWS_REGION = env.AWS_REGION;
  const parsed = checkedSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0] ?? 'settings');
        // Never echo a secret back, even a malformed one.
        const given = SECRET_SETTINGS.has(name) ? undefined : input[name];
        return `${name}: ${issue.message}${given === undefined ? '' : ` (got '${given}')`}`;
      }),
    );
  }
  return Object.freeze(parsed.data);
}

/** The settings an environment gives, empty ones left out. */
function givenSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(settingsSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value.trim();
  }
  return input;
}

/**
 * What an answer's CORS headers need, readable when the rest cannot be yet (a function whose start failed, before its
 * secret settings were read: shared/wiring/process.ts). Invalid, no origin is allowed.
 */
export function loadCorsSettings(env: NodeJS.ProcessEnv = process.env): Pick<Settings, 'SVC_CORS_ORIGINS' | 'API_KEY_NAME'> {
  const parsed = settingsSchema.pick({ SVC_CORS_ORIGINS: true, API_KEY_NAME: true }).safeParse(givenSettings(env));
  return parsed.success ? parsed.data : { SVC_CORS_ORIGINS: [], API_KEY_NAME: 'X-API-Key' };
}

let cached: Readonly<Settings> | undefined;

/** Where the local key provider's master key lives: SVC_MASTER_KEY_FILE, else `<SVC_DATA_DIR>/master.key`. */
export function masterKeyPath(settings: Pick<Settings, 'SVC_MASTER_KEY_FILE' | 'SVC_DATA_DIR'>): string {
  return settings.SVC_MASTER_KEY_FILE ?? `${settings.SVC_DATA_DIR.replace(/\/+$/, '')}/master.key`;
}

/** Where data subjects' keys are kept with SVC_SUBJECT_KEY_STORE=file: `<SVC_DATA_DIR>/subjects`. */
export function subjectsDir(settings: Pick<Settings, 'SVC_DATA_DIR'>): string {
  return `${settings.SVC_DATA_DIR.replace(/\/+$/, '')}/subjects`;
}

/** The node identity file: SVC_VALIDATOR_IDENTITY_PATH, else `<SVC_DATA_DIR>/identity.json`. */
export function identityPath(settings: Pick<Settings, 'SVC_VALIDATOR_IDENTITY_PATH' | 'SVC_DATA_DIR'>): string {
  return settings.SVC_VALIDATOR_IDENTITY_PATH ?? `${settings.SVC_DATA_DIR.replace(/\/+$/, '')}/identity.json`;
}

/** The process's settings, read once. */
export function getConfig(): Readonly<Settings> {
  cached ??= loadConfig();
  return cached;
}
