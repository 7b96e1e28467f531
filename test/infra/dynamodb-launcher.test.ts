/**
 * The compiled main that binds DynamoDB Local to 127.0.0.1 (infra/local/java) is its source's: a change to the
 * .java without `npm run build:dynamodb-launcher` would leave the stack running the old class. javac's output is
 * the same bytes for the same source and compiler (17 built the kept class); with another javac, or none (a Java
 * runtime only), there is nothing to compare with.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT } from '#infra/bundling';

const DIR = join(ROOT, 'infra', 'local', 'java');
const JAR = join(ROOT, 'node_modules', 'amplify-dynamodb-simulator', 'emulator', 'DynamoDBLocal.jar');

it('the kept LoopbackDynamoDbLocal.class is compiled from its source', (t) => {
  const version = spawnSync('javac', ['-version'], { encoding: 'utf8' });
  const major = /javac (\d+)/.exec(`${version.stdout}${version.stderr}`)?.[1];
  if (version.status !== 0 || major !== '17') return t.skip(`javac 17 is not here (${major ? `javac ${major}` : 'no javac'})`);
  const out = mkdtempSync(join(tmpdir(), 'javac-'));
  try {
    const built = spawnSync('javac', ['--release', '8', '-Xlint:-options', '-cp', JAR, '-d', out, join(DIR, 'LoopbackDynamoDbLocal.java')], {
      encoding: 'utf8',
    });
    assert.equal(built.status, 0, built.stderr);
    assert.ok(
      readFileSync(join(out, 'LoopbackDynamoDbLocal.class')).equals(readFileSync(join(DIR, 'LoopbackDynamoDbLocal.class'))),
      'infra/local/java/LoopbackDynamoDbLocal.class differs from its source: run npm run build:dynamodb-launcher',
    );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
