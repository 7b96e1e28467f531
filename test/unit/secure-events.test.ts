/**
 * A secure event's nonce after a failed append: given back only when nothing was appended. An append whose outcome
 * is unknown (a 500 that may have landed) keeps it spent, or a relay's retry lands the one signature twice (red team,
 * 2026-12-07).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { createAdmin, secureEventMessage } from '#shared/admin/admin';
import { ChainNotFoundError, OutcomeUnknownError } from '#shared/errors';

const pair = generateKeyPairSync('ed25519');
const publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');

/** An admin domain over a ledger whose appends fail as told, then land; its nonces in memory. */
function world(failures: Error[]) {
  const spent = new Set<string>();
  const landed: string[] = [];
  const admin = createAdmin({
    repository: {
      useNonce: async (signer: string, nonce: string) => !spent.has(`${signer} ${nonce}`) && Boolean(spent.add(`${signer} ${nonce}`)),
      releaseNonce: async (signer: string, nonce: string) => void spent.delete(`${signer} ${nonce}`),
    } as never,
    organizations: { getOrganization: async (org_id: string) => ({ org_id, name: org_id, public_key: publicKey }) as never },
    ledger: {
      appendEvent: async (chain: string, draft: { entity_id: string }) => {
        const failure = failures.shift();
        if (failure) throw failure;
        landed.push(draft.entity_id);
        return { event_id: `${chain}_${landed.length}_0`, block: { index: landed.length } };
      },
    } as never,
    access: { chain: async () => undefined } as never,
    sealer: undefined as never,
    identity: { kind: 'file', path: '/nonexistent/identity.json' },
    licenseKey: undefined,
    peerTimeoutMs: 1_000,
    apiKeyHeader: 'X-API-Key',
  });
  const fields = { entity_id: 'ship-9', event_type: 'cleared', details: { berth: 12 }, nonce: 'nonce-0001' };
  const body = { ...fields, org_id: 'port', signature: sign(null, secureEventMessage({ chain_name: 'gates', ...fields }), pair.privateKey).toString('hex') };
  return { admin, body, landed };
}

describe("a secure event's nonce after a failed append", () => {
  it('stays spent when the outcome is unknown: the retry is 409, the signature lands at most once', async () => {
    const { admin, body, landed } = world([new OutcomeUnknownError('gates')]);
    await assert.rejects(admin.secureEvent('gates', body), OutcomeUnknownError);
    await assert.rejects(admin.secureEvent('gates', body), /already used/);
    assert.deepEqual(landed, []);
  });

  it('stays spent after an error of no known kind (a bug, a crash of a dependency): the outcome is not known either', async () => {
    const { admin, body } = world([new TypeError('something broke')]);
    await assert.rejects(admin.secureEvent('gates', body), TypeError);
    await assert.rejects(admin.secureEvent('gates', body), /already used/);
  });

  it('is given back when nothing was appended (a chain that does not exist): the same body lands once it does', async () => {
    const { admin, body, landed } = world([new ChainNotFoundError('gates')]);
    await assert.rejects(admin.secureEvent('gates', body), ChainNotFoundError);
    const res = await admin.secureEvent('gates', body);
    assert.equal(res.verified, true);
    assert.deepEqual(landed, ['ship-9']);
  });
});
