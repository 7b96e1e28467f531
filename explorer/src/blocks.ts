/** The block browser: a chain's blocks newest first, one block by index or hash, its proofs. */
import { ApiError, type Block, type BlockPage, path, request } from './api.ts';
import { $, clearError, element, short, showError } from './dom.ts';
import { drawInclusion, verifyBlock } from './verify.ts';

const PAGE = 10;
let chain = '';
let offset = 0;
let selected: Block | undefined;

export function setChains(names: string[]): void {
  const select = $<HTMLSelectElement>('#block-chain');
  const current = select.value || chain;
  select.replaceChildren(...names.map((name) => element('option', { value: name, textContent: name })));
  if (names.includes(current)) select.value = current;
  chain = select.value;
}

/** The latest page asked for: an answer to an earlier ask (another chain, another offset) arriving after it is dropped. */
let asked = 0;

export async function loadPage(): Promise<void> {
  if (!chain) return;
  const ask = ++asked;
  const page = await request<BlockPage>(path.blocks(chain, PAGE, offset));
  // A slower answer to the page shown before (the view's first load, a redraw on a new block) must not replace the page
  // asked for since: a CI run saw the chain picked answered, then overwritten by the first chain's page.
  if (ask !== asked) return;
  const body = $('#block-table tbody');
  body.replaceChildren(
    ...page.blocks.map((block) => {
      const row = element(
        'tr',
        { tabIndex: 0 },
        element('td', { textContent: String(block.index) }),
        element('td', { textContent: short(block.hash), title: block.hash, className: 'mono' }),
        element('td', { textContent: String(block.events.length) }),
        element('td', { textContent: new Date(block.timestamp * 1000).toLocaleString() }),
      );
      row.addEventListener('click', () => show(block));
      row.addEventListener('keydown', (e) => e.key === 'Enter' && show(block));
      return row;
    }),
  );
  const first = page.total - offset - 1;
  $('#page-info').textContent = page.total ? `${Math.max(first - page.blocks.length + 1, 0)}–${first} of ${page.total}` : 'no blocks';
  $<HTMLButtonElement>('#page-prev').disabled = offset === 0;
  $<HTMLButtonElement>('#page-next').disabled = offset + PAGE >= page.total;
}

/** Opens a block in Blocks (from the monitor's feed): its chain picked, the block shown and verified. */
export async function openBlock(chainName: string, index: number): Promise<void> {
  try {
    const block = await request<Block>(path.block(chainName, index));
    const select = $<HTMLSelectElement>('#block-chain');
    if (![...select.options].some((option) => option.value === chainName)) select.append(element('option', { value: chainName, textContent: chainName }));
    select.value = chain = chainName;
    offset = 0;
    show(block);
  } catch (error) {
    showError(error);
  }
}

/** Said beside a data subject's details: the block holds them sealed, so no proof covers what the service opened. */
const OPENED = 'personal data opened by the service, not covered by the verification:';

function show(block: Block): void {
  selected = block;
  $('#block-detail').hidden = false;
  $('#block-title').textContent = `${block.chain_name} #${block.index}`;
  $('#block-json').textContent = JSON.stringify(block, null, 2);
  // Its fields for people; the raw JSON a click away.
  const row = (name: string, value: string, mono = false) =>
    element('tr', {}, element('th', { textContent: name }), element('td', { textContent: value, className: mono ? 'mono' : '' }));
  $('#block-fields tbody').replaceChildren(
    row('Chain', block.chain_name),
    row('Index', String(block.index)),
    row('Time', new Date(block.timestamp * 1000).toISOString()),
    row('Hash', block.hash, true),
    row('Previous hash', block.previous_hash, true),
    row('Events', String(block.events.length)),
  );
  $('#block-events tbody').replaceChildren(
    ...block.events.map((event) => {
      const details = JSON.stringify(event.details ?? {}).slice(0, 200);
      return element(
        'tr',
        {},
        element('td', { textContent: event.event_id, className: 'mono' }),
        element('td', { textContent: event.entity_id }),
        // A secure event names its signer: the block's verification (the client's) checks the signature too.
        event.signed
          ? element(
              'td',
              {},
              `${event.event_type} `,
              element('span', { className: 'signed', textContent: `signed by ${event.signed.org_id} (key ${event.signed.public_key.slice(0, 12)}…)` }),
            )
          : element('td', { textContent: event.event_type }),
        // A data subject's details are sealed in the block (its hash covers {}): what shows is the service's opening
        // of them, which no proof covers (the red team had a lying server show any details under "Verified").
        event.subject_id === undefined
          ? element('td', { textContent: details, className: 'mono' })
          : element('td', { className: 'mono opened' }, element('em', { textContent: OPENED }), ` ${details}`),
      );
    }),
  );
  $('#proof-output').hidden = true;
  const verdict = $('#block-verified');
  verdict.textContent = 'Verifying…';
  verdict.className = 'verdict';
  void verifyBlock(block).then((result) => {
    if (selected !== block) return; // another block was picked meanwhile
    const opened = block.events.filter((event) => event.subject_id !== undefined).length;
    verdict.textContent =
      result.verified && opened > 0
        ? `${result.words} · the details of its ${opened} personal-data event${opened > 1 ? 's' : ''} are not: the block holds them sealed`
        : result.words;
    verdict.className = `verdict ${result.verified ? 'verified' : 'refuted'}`;
  });
}

async function showProof(kind: 'proof' | 'anchor'): Promise<void> {
  if (!selected) return;
  const output = $('#proof-output');
  const title = $('#proof-title');
  const steps = $('#proof-path');
  steps.replaceChildren();
  try {
    const proof = await request<unknown>(kind === 'proof' ? path.proof(selected.chain_name, selected.index) : path.anchor(selected.chain_name, selected.index));
    $('#proof-json').textContent = JSON.stringify(proof, null, 2);
    if (kind === 'proof') {
      // The path from the leaf to the root, computed here: each step the hash of a node and its sibling.
      const drawn = drawInclusion(proof as Parameters<typeof drawInclusion>[0]);
      title.textContent = drawn.title;
      steps.replaceChildren(...drawn.steps.map((step) => element('li', { textContent: step, className: 'mono' })));
    } else {
      // Two paths: the block into the tree its anchor names, then the anchor's Main Chain block into the Main Chain's tree.
      const a = proof as {
        block_index: number;
        block_hash: string;
        proof: string[];
        anchor: { main_block_index: number; main_block_hash: string; tree_size: number; merkle_root: string };
        main: { tree_size: number; root: string; proof: string[] };
      };
      const sub = drawInclusion({
        leaf_index: a.block_index,
        tree_size: a.anchor.tree_size,
        block_hash: a.block_hash,
        proof: a.proof,
        root: a.anchor.merkle_root,
      });
      const main = drawInclusion({
        leaf_index: a.anchor.main_block_index,
        tree_size: a.main.tree_size,
        block_hash: a.anchor.main_block_hash,
        proof: a.main.proof,
        root: a.main.root,
      });
      title.textContent = `Anchored in main #${a.anchor.main_block_index}. ${sub.title}; in the Main Chain: ${main.title.replace(/^Block/, 'main block')}`;
      steps.replaceChildren(
        ...[...sub.steps, ...main.steps.map((step) => `main ${step}`)].map((step) => element('li', { textContent: step, className: 'mono' })),
      );
    }
  } catch (error) {
    title.textContent = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
    $('#proof-json').textContent = '';
  }
  output.hidden = false;
}

export function wireBlocks(): void {
  $<HTMLSelectElement>('#block-chain').addEventListener('change', (e) => {
    chain = (e.target as HTMLSelectElement).value;
    offset = 0;
    loadPage().catch(showError);
  });
  $('#page-prev').addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE);
    loadPage().catch(showError);
  });
  $('#page-next').addEventListener('click', () => {
    offset += PAGE;
    loadPage().catch(showError);
  });
  $('#block-query').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $<HTMLInputElement>('#block-hash').value.trim();
    if (!id || !chain) return;
    clearError();
    request<Block>(path.block(chain, id)).then(show, showError);
  });
  $('#block-proof').addEventListener('click', () => void showProof('proof'));
  $('#block-anchor').addEventListener('click', () => void showProof('anchor'));
}
