/**
 * `npm run identity -- <command>`: the node's Ed25519 identity file (SVC_VALIDATOR_IDENTITY_PATH, default
 * `<SVC_DATA_DIR>/identity.json`). Its private key is sealed with the local master key (or KMS when
 * SVC_KMS_KEY_ID is set), never written raw.
 *
 *   init [--force]   create it (refuses to replace one unless --force: the node id would change)
 *   show             the node id and public key
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { KMSClient } from '@aws-sdk/client-kms';
import { createIdentityDocument, openIdentityDocument } from '#shared/admin/identity';
import { identityPath, masterKeyPath } from '#shared/config';
import { fail, settingsOrExit } from './cli.ts';
import { KmsKeyProvider, LocalKeyProvider } from '#shared/offchain/key-providers';
import { createSealer } from '#shared/offchain/offchain';

const { positionals, values } = parseArgs({ args: process.argv.slice(2), allowPositionals: true, options: { force: { type: 'boolean' } } });
const [command] = positionals;
if (command !== 'init' && command !== 'show') fail('Usage:\n  npm run identity -- init [--force]\n  npm run identity -- show');

const config = settingsOrExit();
const path = resolve(identityPath(config));
// Which data dir this is, in every message: a command run with another SVC_DATA_DIR than `npm start`'s finds nothing.
const where = process.env.SVC_VALIDATOR_IDENTITY_PATH
  ? '(SVC_VALIDATOR_IDENTITY_PATH: run this with the same settings as npm start)'
  : `(SVC_DATA_DIR ${resolve(config.SVC_DATA_DIR)}: run this with the same SVC_DATA_DIR as npm start)`;
// `show` only reads: it never makes a master key (it had made one in a data dir of its own, then found no identity).
if (command === 'show' && !existsSync(path)) fail(`No identity at ${path} ${where}; create one with npm run identity -- init`);
let keys: KmsKeyProvider | LocalKeyProvider;
try {
  keys = config.SVC_KMS_KEY_ID
    ? new KmsKeyProvider({ client: new KMSClient({ region: config.SVC_AWS_REGION }), keyId: config.SVC_KMS_KEY_ID })
    : LocalKeyProvider.fromFile(resolve(masterKeyPath(config)), { create: command === 'init' });
} catch (error) {
  fail(`${(error as Error).message} ${where}`);
}
const sealer = createSealer({ keys });

if (command === 'init') {
  if (existsSync(path) && !values.force) fail(`${path} exists already: the node keeps its identity. Use --force to replace it (the node id changes).`);
  const { identity, document } = await createIdentityDocument(sealer);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, document, { mode: 0o600 });
  process.stdout.write(`Created ${path}\nNode id:    ${identity.nodeId}\nPublic key: ${identity.publicKey} (Ed25519)\n`);
} else {
  const identity = await openIdentityDocument(readFileSync(path, 'utf8'), sealer);
  process.stdout.write(`Node id:    ${identity.nodeId}\nPublic key: ${identity.publicKey} (Ed25519)\n`);
}
