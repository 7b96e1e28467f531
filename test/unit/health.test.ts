/**
 * `/health` is open to anyone and counted against no limit: an instance answers from its dependencies' last check
 * for a second, so a flood of it costs each instance one DynamoDB read and one IPFS call a second at most.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HEALTH_REUSE_MS, healthReport, reusedProbes } from '#shared/health';
import { logger } from '#shared/log';

/** A probe that counts its calls, settling each as told (or never). */
function counted(outcome: () => 'ok' | 'fail' | 'hang') {
  const calls = { n: 0 };
  const probe = () => {
    calls.n += 1;
    const now = outcome();
    if (now === 'hang') return new Promise<void>(() => {});
    return now === 'ok' ? Promise.resolve() : Promise.reject(new Error('down'));
  };
  return { calls, probe };
}

describe('/health answers', () => {
  it('from one check a second per instance, however many ask at once or in turn', async () => {
    let clock = 0;
    const db = counted(() => 'ok');
    const ipfs = counted(() => 'ok');
    const probes = reusedProbes({ dynamodb: db.probe, ipfs: ipfs.probe }, HEALTH_REUSE_MS, () => clock);
    const answers = await Promise.all(Array.from({ length: 50 }, () => healthReport(probes)));
    assert.ok(answers.every((a) => a.status === 200));
    for (let i = 0; i < 20; i += 1) {
      clock += 40;
      assert.equal((await healthReport(probes)).status, 200);
    }
    assert.deepEqual([db.calls.n, ipfs.calls.n], [1, 1], '70 answers, one check of each');
    clock += HEALTH_REUSE_MS;
    await healthReport(probes);
    assert.deepEqual([db.calls.n, ipfs.calls.n], [2, 2], 'checked again a second after the last check ended');
  });

  it('says degraded from a failed check for a second, then checks again and says healthy', async () => {
    let clock = 0;
    let ipfsUp = false;
    const db = counted(() => 'ok');
    const ipfs = counted(() => (ipfsUp ? 'ok' : 'fail'));
    const probes = reusedProbes({ dynamodb: db.probe, ipfs: ipfs.probe }, HEALTH_REUSE_MS, () => clock);
    const down = await healthReport(probes);
    assert.equal(down.status, 503);
    assert.equal(down.body.checks.ipfs, 'unavailable');
    ipfsUp = true;
    clock += HEALTH_REUSE_MS / 2;
    assert.equal((await healthReport(probes)).status, 503, 'the failed check is the answer for its second');
    clock += HEALTH_REUSE_MS;
    const up = await healthReport(probes);
    assert.equal(up.status, 200);
    assert.equal(ipfs.calls.n, 2);
  });

  it('does not wait on a check that hangs past a check’s time again: the next request starts its own', async () => {
    let clock = 0;
    let hang = true;
    const db = counted(() => (hang ? 'hang' : 'ok'));
    const ipfs = counted(() => 'ok');
    const probes = reusedProbes({ dynamodb: db.probe, ipfs: ipfs.probe }, HEALTH_REUSE_MS, () => clock);
    const first = probes.dynamodb();
    assert.equal(probes.dynamodb(), first, 'a request while it is in flight shares it');
    hang = false;
    clock += 3_000;
    await probes.dynamodb();
    assert.equal(db.calls.n, 2, 'the hung check was given up for a new one');
  });

  it('logs a failed check once, and a hung one once, however many answers it gave', { timeout: 15_000 }, async () => {
    const warned: string[] = [];
    const warn = logger.warn;
    logger.warn = (message: string, fields?: Record<string, unknown>) => void warned.push(`${message} ${fields?.check}`);
    try {
      const failing = reusedProbes({ dynamodb: () => Promise.reject(new Error('down')), ipfs: () => Promise.resolve() });
      await Promise.all(Array.from({ length: 20 }, () => healthReport(failing)));
      assert.deepEqual(warned, ['health check failed dynamodb']);
      warned.length = 0;
      const hung = reusedProbes({ dynamodb: () => new Promise<void>(() => {}), ipfs: () => Promise.resolve() });
      const answers = await Promise.all(Array.from({ length: 20 }, () => healthReport(hung)));
      assert.ok(answers.every((a) => a.status === 503 && a.body.checks.dynamodb === 'unavailable'));
      assert.deepEqual(warned, ['health check failed dynamodb'], '20 answers of one hung check: one line');
    } finally {
      logger.warn = warn;
    }
  });

  it('reports a probe that throws before it returns a promise as unavailable', async () => {
    const probes = reusedProbes({
      dynamodb: () => {
        throw new Error('no table');
      },
      ipfs: () => Promise.resolve(),
    });
    const report = await healthReport(probes);
    assert.equal(report.status, 503);
    assert.equal(report.body.checks.dynamodb, 'unavailable');
  });
});
