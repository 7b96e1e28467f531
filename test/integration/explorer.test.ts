/**
 * The explorer in a real browser (Debian's Chromium through playwright-core) against the running local
 * stack: it loads with no console errors, the monitor counts blocks as events are posted, the tree shows a
 * new Sub-Chain and its anchor, the block browser pages and proves, and the CID decoder exists only for an
 * admin key. A screenshot of each view lands in test-output/screenshots.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { secureEventMessage } from '#shared/admin/admin';
import { expandRoutes, GROUPS } from '#shared/api/routes';
import { freePort } from '#infra/local/ports';
import { allOrStop, call, keysCli, removeDir, startStack, type Stack, tempDataDir } from '#test/support/stack';
import { startWitness, type WitnessProcess, witnessVkey } from '#test/support/witness';

// The callbacks given to waitForFunction run in the page, where `document` exists.
declare const document: { querySelector(selector: string): { textContent: string | null } | null; documentElement: { scrollWidth: number } };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = new URL('../../test-output/screenshots/', import.meta.url).pathname;
const ADMIN_KEY = 'explorer-test-admin-key-0123456789';

let browser: Browser;
let open: Stack;
let secured: Stack;
let readerKey: string;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `Chromium is needed at ${CHROMIUM} (apt-get install -y chromium; .ci/run installs it)`);
  mkdirSync(SHOTS, { recursive: true });
  [open, secured] = await allOrStop<[Stack, Stack]>([
    startStack(),
    startStack({ env: { SVC_AUTH_ENABLED: 'true', SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_AUTH_CACHE_SECONDS: '0' } }),
  ]);
  readerKey = /Key \(shown once, store it now\): (\S+)/.exec(await keysCli(secured.dataDir, ['create', '--role', 'reader']))![1]!;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
});

after(async () => {
  await browser?.close();
  for (const stack of [open, secured]) {
    if (!stack) continue;
    await stack.stop();
    removeDir(stack.dataDir);
  }
});

/** A page that records every console error and uncaught exception. */
async function openPage(url: string, viewport = { width: 1280, height: 900 }): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  return { page, errors };
}

/** The monitor's WebSocket is subscribed (its status reads "live", whichever view is shown). */
const waitLive = (page: Page) => page.waitForFunction(() => document.querySelector('#ws-status')?.textContent === 'live', undefined, { timeout: 15_000 });

const numberIn = async (page: Page, selector: string) => Number(await page.textContent(selector));

/**
 * A proxy in front of a stack that answers as it does, except the JSON answers `alter` changes in place (a server that
 * lies). The monitor's WebSocket is not proxied.
 */
async function lyingProxy(target: string, alter: (pathname: string, answer: any) => void): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', target);
      const hop = ['host', 'connection', 'upgrade', 'keep-alive', 'transfer-encoding', 'expect'];
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !hop.includes(k) && !k.startsWith('sec-websocket')) as [string, string][]);
      let upstream: Response;
      try {
        upstream = await fetch(url, { method: req.method, headers, ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }) });
      } catch {
        res.writeHead(502).end();
        return;
      }
      let body = Buffer.from(await upstream.arrayBuffer());
      if (upstream.ok && (upstream.headers.get('content-type') ?? '').includes('json')) {
        const answer = JSON.parse(body.toString('utf8'));
        alter(url.pathname, answer);
        body = Buffer.from(JSON.stringify(answer));
      }
      const out: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
      });
      res.writeHead(upstream.status, out).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

describe('explorer', () => {
  it('loads with no console errors and goes live', async () => {
    const { page, errors } = await openPage(`${open.url}/explorer`);
    await waitLive(page);
    // It opens on the chains, not on a live count that starts at zero.
    await page.waitForSelector('#tree:not([hidden])');
    assert.equal(await page.isHidden('#monitor'), true);
    assert.equal(await page.textContent('#role'), 'admin'); // auth off: everything is allowed
    for (const tab of ['tree', 'blocks', 'monitor']) {
      await page.click(`#tabs a[data-tab="${tab}"]`);
      await page.waitForSelector(`#${tab}:not([hidden])`);
    }
    await page.waitForTimeout(300);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('counts the blocks and events arriving while events are posted', async () => {
    const { page, errors } = await openPage(`${open.url}/explorer#monitor`);
    await waitLive(page);
    const before = await numberIn(page, '#block-count');
    await call(open.url, 'POST', '/api/v1/chains/watched/create');
    for (let i = 0; i < 5; i++) {
      const res = await call(open.url, 'POST', '/api/v1/chains/watched/events', { entity_id: `parcel-${i}`, event_type: 'scanned' });
      assert.equal(res.status, 200, res.text);
    }
    // Creating the first Sub-Chain adds the Main Chain's genesis and the Sub-Chain's genesis; then 5 events.
    await page.waitForFunction((n) => Number(document.querySelector('#event-count')?.textContent) >= n, 5, { timeout: 15_000 });
    await page.waitForFunction((n) => Number(document.querySelector('#block-count')?.textContent) >= n, before + 5, { timeout: 15_000 });
    const feed = await page.textContent('#feed');
    assert.match(feed ?? '', /watched · scanned · parcel-4/);
    // The chart's next tick puts those blocks into the rate (and the plotted series it is computed from).
    await page.waitForFunction(() => Number(document.querySelector('#block-rate')?.textContent) > 0, undefined, { timeout: 5_000 });
    await page.screenshot({ path: `${SHOTS}monitor.png`, fullPage: true });
    // An event of the feed opens its block, verified there.
    await page.click('#feed a:text("watched · scanned · parcel-4")');
    await page.waitForSelector('#block-title:text("watched #5")');
    await page.waitForSelector('#block-verified.verified', { timeout: 15_000 });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows the last minutes when the monitor opens, before anything is pushed', async () => {
    // On the chain the test before made (the tree's test counts the Sub-Chains).
    for (let i = 0; i < 3; i++) {
      const res = await call(open.url, 'POST', '/api/v1/chains/watched/events', { entity_id: `before-${i}`, event_type: 'stored' });
      assert.equal(res.status, 200, res.text);
    }
    const { page, errors } = await openPage(`${open.url}/explorer#monitor`);
    await page.waitForFunction(() => /then live/.test(document.querySelector('#history-note')?.textContent ?? ''), undefined, { timeout: 15_000 });
    assert.match((await page.textContent('#feed')) ?? '', /watched · stored · before-2/);
    assert.ok((await numberIn(page, '#event-count')) >= 3, 'the events read are counted');
    // A block read on opening and then pushed is counted once: one more event now moves the count by one.
    await waitLive(page);
    const events = await numberIn(page, '#event-count');
    assert.equal((await call(open.url, 'POST', '/api/v1/chains/watched/events', { entity_id: 'after-0', event_type: 'stored' })).status, 200);
    await page.waitForFunction(() => /after-0/.test(document.querySelector('#feed')?.textContent ?? ''), undefined, { timeout: 15_000 });
    assert.equal(await numberIn(page, '#event-count'), events + 1);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('shows a new Sub-Chain in the tree, then its anchor in the Main Chain', async () => {
    const { page, errors } = await openPage(`${open.url}/explorer#tree`);
    await waitLive(page);
    await call(open.url, 'POST', '/api/v1/chains/shipments/create');
    await call(open.url, 'POST', '/api/v1/chains/shipments/events', { entity_id: 'box-1', event_type: 'packed' });
    const node = page.locator('li.node.sub[data-chain="shipments"]');
    await node.waitFor({ timeout: 15_000 });
    assert.match((await node.textContent()) ?? '', /not anchored yet/);
    const proof = await call(open.url, 'POST', '/api/v1/chains/shipments/submit-proof');
    assert.equal(proof.status, 200, proof.text);
    const mainIndex = Number(/_(\d+)$/.exec(proof.body.proof_id)![1]);
    // The anchor block arrives over the WebSocket and the tree redraws by itself.
    await page.waitForFunction(
      (index) => document.querySelector('li.node.sub[data-chain="shipments"] .anchor')?.textContent?.includes(`anchored in main #${index} · tree size 2`),
      mainIndex,
      { timeout: 15_000 },
    );
    assert.match((await page.textContent('li.node.main')) ?? '', /^main · \d+ blocks · 2 Sub-Chains/);
    // Verified in the browser: each chain's latest signed checkpoint, and the anchor (its Main Chain block proven, the
    // Sub-Chain's checkpoint consistent with the tree it anchors). Appended to after the anchor: a consistency proof.
    await call(open.url, 'POST', '/api/v1/chains/shipments/events', { entity_id: 'box-2', event_type: 'packed' });
    await page.click('#tree-refresh');
    const shipments = 'li.node.sub[data-chain="shipments"]';
    // The tree redraws as blocks are pushed: wait for a draw whose verdicts are both in.
    await page
      .waitForFunction(
        (node) =>
          ['checkpoint', 'anchor'].every((role) => /^Verified/.test(document.querySelector(`${node} [data-verdict="${role}"]`)?.textContent ?? '')) &&
          /3 blocks/.test(document.querySelector(`${node} [data-verdict="checkpoint"]`)?.textContent ?? ''),
        shipments,
        { timeout: 15_000 },
      )
      .catch(async (error: Error) => {
        throw new Error(`${error.message}: ${await page.textContent(shipments)}`);
      });
    assert.match(
      (await page.textContent(`${shipments} [data-verdict="checkpoint"]`)) ?? '',
      /^Verified checkpoint: 3 blocks · root [0-9a-f]{12}… · signed by the node's key · consistent with the last this browser saw · no witness cosignature$/,
    );
    assert.match(
      (await page.textContent(`${shipments} [data-verdict="anchor"]`)) ?? '',
      new RegExp(`^Verified anchor: main #${mainIndex} proven, and the checkpoint of 3 blocks extends the 2 it anchors$`),
    );
    await page.waitForFunction(() => /^Verified/.test(document.querySelector('li.node.main > [data-verdict="checkpoint"]')?.textContent ?? ''), undefined, {
      timeout: 15_000,
    });
    // The tree redraws on every push, but verifies a grown chain again at most every 10 s: a busy ledger is not a flood
    // of evidence requests from each open page.
    let asked = 0;
    page.on('request', (request) => void (request.url().includes('/shipments/evidence') && (asked += 1)));
    const redrawn = await page.textContent('#tree-note');
    for (let n = 3; n < 9; n += 1) {
      await call(open.url, 'POST', '/api/v1/chains/shipments/events', { entity_id: `box-${n}`, event_type: 'packed' });
      await new Promise((r) => setTimeout(r, 600)); // a redraw for each (the tree redraws at most twice a second)
    }
    await page.waitForFunction((before) => document.querySelector('#tree-note')?.textContent !== before, redrawn, { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    assert.ok(asked <= 1, `${asked} evidence requests for shipments while 6 blocks were pushed`);
    await page.screenshot({ path: `${SHOTS}tree.png`, fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('browses blocks newest first, finds one by hash, and shows its proofs', async () => {
    await call(open.url, 'POST', '/api/v1/chains/pages/create');
    for (let i = 0; i < 12; i++) await call(open.url, 'POST', '/api/v1/chains/pages/events', { entity_id: `p${i}`, event_type: 'e' });
    const { page, errors } = await openPage(`${open.url}/explorer#blocks`);
    await page.waitForSelector('#block-chain option[value="pages"]', { state: 'attached', timeout: 10_000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}\nshown error: ${await page.textContent('#error')}; console: ${errors.join(' | ')}`);
    });
    await page.selectOption('#block-chain', 'pages');
    await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === '3–12 of 13');
    assert.equal(await page.textContent('#block-table tbody tr:first-child td:first-child'), '12');
    await page.click('#page-next');
    await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === '0–2 of 13');
    assert.equal(await page.locator('#block-table tbody tr').count(), 3);

    const block = (await call(open.url, 'GET', '/api/v1/chains/pages/blocks/7')).body;
    await page.fill('#block-hash', block.hash);
    await page.click('#block-query button[type="submit"]');
    await page.waitForSelector('#block-title:text("pages #7")');
    assert.match((await page.textContent('#block-json')) ?? '', new RegExp(block.hash));
    // Checked in the browser: its hash, and its inclusion in a checkpoint signed by the node's key.
    await page.waitForSelector('#block-verified.verified', { timeout: 15_000 });
    assert.match((await page.textContent('#block-verified')) ?? '', /^Verified: in the checkpoint of 13 blocks/);
    // Drawn for people: its fields in a table (the raw JSON a click away), and the proof's path from leaf to root.
    assert.match((await page.textContent('#block-fields')) ?? '', new RegExp(`Index7.*Hash${block.hash}.*Previous hash${block.previous_hash}`));
    assert.match((await page.textContent('#block-events')) ?? '', /pages_7_0p6e/);
    await page.click('#block-proof');
    await page.waitForSelector('#proof-output:not([hidden])');
    const proof = JSON.parse((await page.textContent('#proof-json'))!);
    assert.equal(proof.leaf_index, 7);
    assert.equal(await page.textContent('#proof-title'), 'Block 7 in the tree of 13 blocks: the path below reaches its root');
    const steps = await page.locator('#proof-path li').allTextContents();
    assert.equal(steps.length, proof.proof.length + 2, steps.join('\n'));
    assert.match(steps[0]!, /^leaf 7: H\(0x00 ‖ block hash\) = [0-9a-f]{64}$/);
    assert.equal(steps.at(-1), `root ${proof.root}: the proof's root, reached from the block`);
    await page.screenshot({ path: `${SHOTS}blocks.png`, fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('verifies the block it shows in the browser, and says why not behind a server that lies (a changed block, an older checkpoint, a forked log)', async () => {
    // A proxy in front of the stack that answers honestly, or changes what the evidence route answers.
    let mode: 'honest' | 'changed-block' | 'older-checkpoint' | 'forked' | 'changed-proof' = 'honest';
    let older: { checkpoint: string; size: number } | undefined;
    const proxy = await lyingProxy(open.url, (pathname, answer) => {
      if (pathname.endsWith('/consistency') && mode === 'changed-proof') answer.proof = answer.proof.map(() => '07'.repeat(32));
      if (!pathname.endsWith('/evidence')) return;
      if (mode === 'changed-block') for (const block of answer.blocks ?? []) block.events[0].event_type = 'forged';
      if (mode === 'older-checkpoint' && answer.checkpoint) Object.assign(answer, { checkpoint: older!.checkpoint, tree_size: older!.size });
      if (mode === 'forked' && answer.checkpoint) {
        const lines = String(answer.checkpoint).split('\n');
        lines[2] = Buffer.alloc(32, 7).toString('base64'); // another root for the same size, under the node's signature
        answer.checkpoint = lines.join('\n');
      }
    });
    const via = proxy.url;
    try {
      const append = (n: number) => call(open.url, 'POST', '/api/v1/chains/lies/events', { entity_id: `l${n}`, event_type: 'e' });
      await call(open.url, 'POST', '/api/v1/chains/lies/create');
      await append(1);
      // A genuine checkpoint of 2 blocks, kept to be answered later as if it were the latest.
      const early = (await call(open.url, 'GET', '/api/v1/chains/lies/evidence')).body;
      older = { checkpoint: early.checkpoint, size: early.tree_size };
      assert.equal(older.size, 2);
      await append(2);
      await append(3);
      assert.equal((await call(open.url, 'POST', '/api/v1/chains/lies/submit-proof')).status, 200);

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${via}/explorer#blocks`);
      await page.waitForSelector('#block-chain option[value="lies"]', { state: 'attached', timeout: 10_000 });
      await page.selectOption('#block-chain', 'lies');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === '0–3 of 4');
      const verdict = async () => {
        await page.waitForFunction(() => !['', 'Verifying…'].includes(document.querySelector('#block-verified')?.textContent ?? ''), undefined, {
          timeout: 15_000,
        });
        return { words: (await page.textContent('#block-verified')) ?? '', verified: await page.locator('#block-verified.verified').count() };
      };
      const find = async (index: number) => {
        // The last verdict cleared first: asked for the block already shown (lies #5 twice), the title is there at once,
        // and the verdict read before this query's own would be the last one's (seen once under load, 2026-12-07).
        await page.evaluate(() => {
          document.querySelector('#block-verified')!.textContent = '';
        });
        await page.fill('#block-hash', String(index));
        await page.click('#block-query button[type="submit"]');
        await page.waitForSelector(`#block-title:text("lies #${index}")`);
        return verdict();
      };

      // Honest: the newest block, proven into the checkpoint of 4 blocks; the node's key pinned, the checkpoint kept.
      await page.click('#block-table tbody tr:first-child');
      const first = await verdict();
      assert.match(first.words, /^Verified: in the checkpoint of 4 blocks \(root [0-9a-f]{12}…\) signed by the node's key/);
      assert.equal(first.verified, 1);
      await page.screenshot({ path: `${SHOTS}block-verified.png`, fullPage: true });
      await append(4);
      await append(5);

      mode = 'changed-block';
      const changed = await find(2);
      assert.match(changed.words, /^Not verified: 'lies': block 2's hash does not match its contents \(block-hash\)/);
      assert.equal(await page.locator('#block-verified.refuted').count(), 1);
      await page.screenshot({ path: `${SHOTS}block-refuted.png`, fullPage: true });

      mode = 'older-checkpoint';
      assert.match((await find(5)).words, /^Not verified: 'lies': the log shows 2 blocks, after showing 4 \(rollback\)/);

      mode = 'forked';
      assert.match((await find(5)).words, /^Not verified: 'lies': .*signature.* \(signature\)/);

      // Honest again: the newer checkpoint is proven consistent with the one this browser kept.
      mode = 'honest';
      assert.match((await find(5)).words, /^Verified: in the checkpoint of 6 blocks/);
      // Its anchor drawn: the block into the tree the anchor names, the anchor's block into the Main Chain's.
      await find(2);
      await page.click('#block-anchor');
      await page.waitForFunction(() => /^Anchored in main/.test(document.querySelector('#proof-title')?.textContent ?? ''), undefined, { timeout: 10_000 });
      assert.match(
        (await page.textContent('#proof-title')) ?? '',
        /^Anchored in main #\d+\. Block 2 in the tree of 4 blocks: the path below reaches its root; in the Main Chain: main block \d+ in the tree of \d+ blocks: the path below reaches its root$/,
      );
      const anchorSteps = await page.locator('#proof-path li').allTextContents();
      assert.ok(
        anchorSteps.some((step) => /^main root [0-9a-f]{64}: the proof's root, reached from the block$/.test(step)),
        anchorSteps.join('\n'),
      );

      // The tree: the anchor of 4 blocks, with a consistency proof to the checkpoint of 6 that is not one.
      mode = 'changed-proof';
      await page.click('a[data-tab="tree"]');
      const anchorLine = 'li.node.sub[data-chain="lies"] [data-verdict="anchor"]';
      await page.waitForFunction((line) => /^Anchor not verified/.test(document.querySelector(line)?.textContent ?? ''), anchorLine, { timeout: 15_000 });
      assert.match((await page.textContent(anchorLine)) ?? '', /^Anchor not verified: .+\(\w+\)$/);
      await page.screenshot({ path: `${SHOTS}tree-refuted.png`, fullPage: true });
      await page.close();
    } finally {
      proxy.close();
    }
  });

  it("says a data subject's details are the service's opening, not verified, behind a server that changes them (red team)", async () => {
    // The block hashes a data subject's details as {} (they are sealed in it): a lying server could show any details
    // for such an event, under "Verified".
    let forge = false;
    const proxy = await lyingProxy(open.url, (_pathname, answer) => {
      if (!forge) return;
      for (const block of answer.blocks ?? (Array.isArray(answer.events) ? [answer] : []))
        for (const event of block.events ?? []) if (event.subject_id !== undefined) event.details = { ssn: 'forged' };
    });
    try {
      await call(open.url, 'POST', '/api/v1/chains/personal/create');
      const posted = await call(open.url, 'POST', '/api/v1/chains/personal/events', {
        entity_id: 'p1',
        event_type: 'registered',
        subject_id: 'subj-explorer',
        details: { ssn: '123-45-6789' },
      });
      assert.equal(posted.status, 200, posted.text);
      forge = true;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${proxy.url}/explorer#blocks`);
      await page.waitForSelector('#block-chain option[value="personal"]', { state: 'attached', timeout: 10_000 });
      await page.selectOption('#block-chain', 'personal');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === '0–1 of 2');
      await page.click('#block-table tbody tr:first-child');
      await page.waitForFunction(() => document.querySelector('#block-verified')?.textContent !== 'Verifying…', undefined, { timeout: 15_000 });
      assert.match(
        (await page.textContent('#block-verified')) ?? '',
        /^Verified: .* · the details of its 1 personal-data event are not: the block holds them sealed$/,
      );
      assert.equal(
        ((await page.locator('#block-events tbody td.opened').textContent()) ?? '').trim(),
        'personal data opened by the service, not covered by the verification: {"ssn":"forged"}',
      );
      await page.close();
    } finally {
      proxy.close();
    }
  });

  it('names who signed a secure event beside its type, in a block it verifies', async () => {
    const pair = generateKeyPairSync('ed25519');
    const publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex');
    await call(open.url, 'POST', '/api/v1/chains/signedx/create');
    assert.equal((await call(open.url, 'POST', '/api/business/organizations', { org_id: 'harbour', name: 'Harbour', public_key: publicKey })).status, 201);
    const event = { entity_id: 'ship-2', event_type: 'cleared', details: { berth: 3 }, nonce: 'nonce-explorer-1' };
    const signature = sign(null, secureEventMessage({ chain_name: 'signedx', ...event }), pair.privateKey).toString('hex');
    const relayed = await call(open.url, 'POST', '/api/admin/chains/signedx/secure-events', { ...event, org_id: 'harbour', signature });
    assert.equal(relayed.status, 200, relayed.text);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await page.goto(`${open.url}/explorer#blocks`);
      await page.waitForSelector('#block-chain option[value="signedx"]', { state: 'attached', timeout: 10_000 });
      await page.selectOption('#block-chain', 'signedx');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === '0–1 of 2');
      await page.click('#block-table tbody tr:first-child');
      await page.waitForSelector('#block-verified.verified', { timeout: 15_000 });
      assert.equal(((await page.locator('#block-events tbody td .signed').textContent()) ?? '').trim(), `signed by harbour (key ${publicKey.slice(0, 12)}…)`);
    } finally {
      await page.close();
    }
  });

  it('checks the cosignatures of the witnesses it pinned, and says so when a server drops them', async () => {
    // A stack with a witness, behind a proxy that answers honestly, or drops the checkpoints' cosignatures.
    const witnessDir = tempDataDir('explorer-witness');
    const witnessPort = await freePort();
    const vkey = witnessVkey(witnessDir);
    const witnessed = await startStack({
      env: { SVC_WITNESSES: `${vkey}=http://127.0.0.1:${witnessPort}`, SVC_WITNESS_INTERVAL_MS: '300', SVC_WITNESS_TIMEOUT_MS: '1000' },
    });
    let witness: WitnessProcess | undefined;
    let drop = false;
    // The page is first opened while the service names no witness (before the operator configured one).
    let unnamed = true;
    const proxy = await lyingProxy(witnessed.url, (pathname, answer) => {
      if (unnamed && pathname === '/explorer/config.json') answer.witnesses = [];
      if (drop && pathname.endsWith('/evidence') && typeof answer.checkpoint === 'string') {
        const [body, signatures] = answer.checkpoint.split('\n\n');
        answer.checkpoint = `${body}\n\n${signatures.split('\n')[0]}\n`; // the node's signature alone
      }
    });
    try {
      witness = await startWitness({ dir: witnessDir, logs: [(await (await fetch(`${witnessed.url}/tlog/vkey`)).text()).trim()], port: witnessPort });
      assert.equal((await call(witnessed.url, 'GET', '/explorer/config.json')).body.witnesses[0], vkey, 'the config names the witness');
      await call(witnessed.url, 'POST', '/api/v1/chains/cosigned/create');
      await call(witnessed.url, 'POST', '/api/v1/chains/cosigned/events', { entity_id: 'c1', event_type: 'e' });

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const line = 'li.node.sub[data-chain="cosigned"] [data-verdict="checkpoint"]';
      await page.goto(`${proxy.url}/explorer#tree`);
      await page.waitForFunction((l) => /^Verified checkpoint/.test(document.querySelector(l)?.textContent ?? ''), line, { timeout: 20_000 });
      assert.match((await page.textContent(line)) ?? '', /not checked here: this page pins no witness key/);
      // Named later: pinned then, and required from then on (an empty list had been pinned for good, 2026-12-06 red team).
      unnamed = false;
      await page.reload();
      await page.waitForFunction((l) => /^Verified checkpoint/.test(document.querySelector(l)?.textContent ?? ''), line, { timeout: 20_000 });
      const words = (await page.textContent(line)) ?? '';
      assert.match(words, /^Verified checkpoint: 2 blocks .* · cosigned by the 1 witness this browser pinned · cosigned at \d{4}-\d\d-\d\dT[\d:.]+Z$/);
      const cosignedAt = Date.parse(/cosigned at (\S+)$/.exec(words)![1]!);
      assert.ok(Math.abs(Date.now() - cosignedAt) < 120_000, `the witness's time, ${new Date(cosignedAt).toISOString()}`);

      // Cosignatures dropped: a block past the checkpoint this browser kept asks for a new one, which is not cosigned.
      await call(witnessed.url, 'POST', '/api/v1/chains/cosigned/events', { entity_id: 'c2', event_type: 'e' });
      drop = true;
      await page.click('a[data-tab="blocks"]');
      await page.waitForSelector('#block-chain option[value="cosigned"]', { state: 'attached', timeout: 10_000 });
      await page.selectOption('#block-chain', 'cosigned');
      await page.fill('#block-hash', '2');
      await page.click('#block-query button[type="submit"]');
      await page.waitForSelector('#block-title:text("cosigned #2")');
      await page.waitForFunction(() => document.querySelector('#block-verified')?.textContent !== 'Verifying…', undefined, { timeout: 15_000 });
      assert.match((await page.textContent('#block-verified')) ?? '', /^Not verified: 'cosigned': .*0 of the 1 witness cosignatures required \(witnesses\)/);
      await page.screenshot({ path: `${SHOTS}block-uncosigned.png`, fullPage: true });
      await page.close();
    } finally {
      proxy.close();
      await witness?.stop();
      await witnessed.stop();
      removeDir(witnessed.dataDir);
      removeDir(witnessDir);
    }
  });

  it('hides the CID decoder from a reader key, and the server refuses it too', async () => {
    const { page } = await openPage(`${secured.url}/explorer`);
    await page.fill('#api-key', readerKey);
    await page.click('#key-form button[type="submit"]');
    await page.waitForSelector('#role:text("not admin")');
    assert.equal(await page.isVisible('#decoder-tab'), false);
    await page.goto(`${secured.url}/explorer#decoder`);
    await page.waitForSelector('#role:text("not admin")');
    assert.equal(await page.isVisible('#decoder-form'), false);
    const refused = await call(secured.url, 'POST', '/api/admin/ipfs/decode', { cid: 'x', nonce: '0'.repeat(24) }, { 'X-API-Key': readerKey });
    assert.equal(refused.status, 403);
    await page.screenshot({ path: `${SHOTS}decoder-refused.png`, fullPage: true });
    await page.close();
  });

  it('decodes a CID with an admin key, on a phone-width screen', async () => {
    const stored = await call(secured.url, 'POST', '/api/v1/offchain', { data: { invoice: 'INV-7', amount: 1200 } }, { 'X-API-Key': ADMIN_KEY });
    assert.equal(stored.status, 201, stored.text);
    const { page } = await openPage(`${secured.url}/explorer`, { width: 390, height: 844 });
    await page.fill('#api-key', ADMIN_KEY);
    await page.click('#key-form button[type="submit"]');
    await page.waitForSelector('#role:text("admin")');
    await page.click('#decoder-tab');
    await page.fill('#cid', stored.body.cid);
    await page.fill('#nonce', stored.body.nonce);
    await page.click('#decoder-form button[type="submit"]');
    await page.waitForSelector('#decoded:not([hidden])');
    await page.waitForFunction(() => document.querySelector('#decoded')?.textContent?.includes('INV-7'));
    const decoded = JSON.parse((await page.textContent('#decoded'))!);
    assert.deepEqual(decoded.data, { invoice: 'INV-7', amount: 1200 });
    assert.equal(decoded.cid, stored.body.cid);
    // Nothing wider than the screen: the page fits a phone.
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `page is ${width}px wide on a 390px screen`);
    await page.screenshot({ path: `${SHOTS}decoder.png`, fullPage: true });
    await page.close();
  });

  it('the API docs page renders each route once, naming where else it is served, with no console errors', async () => {
    const { page, errors } = await openPage(`${open.url}/docs`);
    await page.waitForSelector('.opblock', { timeout: 15_000 });
    // Once: under the first prefix of its group (/api/ledger, not also /api/v1).
    const once = expandRoutes().filter((r) => r.prefix === (r.definition.onlyPrefixes ?? GROUPS[r.group].prefixes)[0]);
    assert.ok(once.length < expandRoutes().length);
    assert.equal(await page.locator('.opblock').count(), once.length);
    assert.equal(await page.locator('.opblock-summary-path', { hasText: /^\/api\/v[12]\// }).count(), 0, 'no twin listed');
    await page.locator('.opblock-summary', { hasText: '/api/ledger/chains/{chain_name}/events' }).first().click();
    await page.getByText('Also served at /api/v1/chains/{chain_name}/events.').first().waitFor({ timeout: 5_000 });
    await page.screenshot({ path: `${SHOTS}docs.png` });
    assert.deepEqual(errors, []);
    await page.close();
  });
});
