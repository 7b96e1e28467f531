/** The Main Chain / Sub-Chain tree: each Sub-Chain under the Main Chain, with its latest anchor. */
import { type BlockPage, type ChainInfo, path, request } from './api.ts';
import { $, element, short, text } from './dom.ts';
import { type CheckpointVerdict, type Verdict, verifyAnchor, verifyCheckpoint } from './verify.ts';

/** Chains whose checkpoint (and anchor) the tree verifies on each draw: the rest say so. */
const VERIFIED_CHAINS = 50;
/**
 * The last verdicts, by chain: a chain is verified again only once it has grown, and at most every RECHECK_MS (the tree
 * redraws up to twice a second on a busy ledger: one evidence request per chain per draw would be a browser's flood);
 * the Refresh button verifies every grown chain at once.
 */
const checked = new Map<string, { size: number; at: number; checkpoint: Promise<CheckpointVerdict>; anchor?: { key: string; verdict: Promise<Verdict> } }>();
const RECHECK_MS = 10_000;
let recheckNow = false;

/** The next draw verifies every chain that has grown (the Refresh button). */
export function verifyAgain(): void {
  recheckNow = true;
}

/** A verdict line: "Verifying…", then the verdict's words, marked verified or refuted. */
function verdictLine(verdict: Promise<Verdict>, role: string): HTMLElement {
  const line = element('div', { className: 'verdict', textContent: 'Verifying…', dataset: { verdict: role } });
  void verdict.then((result) => {
    line.textContent = result.words;
    line.className = `verdict ${result.verified ? 'verified' : 'refuted'}`;
  });
  return line;
}

/** The chain's checkpoint verdict (and its anchor's), verified again only when the chain has grown. */
function verdicts(chain: string, size: number, anchor?: Anchor) {
  let entry = checked.get(chain);
  if (!entry || (entry.size !== size && (recheckNow || Date.now() - entry.at >= RECHECK_MS))) {
    entry = { size, at: Date.now(), checkpoint: verifyCheckpoint(chain) };
    checked.set(chain, entry);
  }
  const key = anchor ? `${anchor.mainIndex}:${anchor.treeSize}` : '';
  if (anchor && entry.anchor?.key !== key) {
    const checkpoint = entry.checkpoint;
    entry.anchor = { key, verdict: checkpoint.then((verdict) => verifyAnchor(chain, anchor, verdict)) };
  }
  return { checkpoint: entry.checkpoint, anchor: anchor ? entry.anchor!.verdict : undefined };
}

interface Anchor {
  mainIndex: number;
  treeSize: number;
  root: string;
}

/** Latest anchor per Sub-Chain, from the Main Chain's newest blocks (up to 500). */
async function anchors(): Promise<Map<string, Anchor>> {
  const found = new Map<string, Anchor>();
  for (let offset = 0; offset < 500; offset += 100) {
    const page = await request<BlockPage>(path.blocks('main', 100, offset));
    for (const block of page.blocks) {
      for (const event of block.events) {
        const details = event.details as { sub_chain?: string; tree_size?: number; merkle_root?: string };
        if (event.event_type === 'sub_chain_proof' && details.sub_chain && !found.has(details.sub_chain)) {
          found.set(details.sub_chain, { mainIndex: block.index, treeSize: details.tree_size ?? 0, root: details.merkle_root ?? '' });
        }
      }
    }
    if (offset + page.blocks.length >= page.total) break;
  }
  return found;
}

export async function renderTree(): Promise<void> {
  const chains = await request<ChainInfo[]>(path.chains());
  const list = $('#chain-tree');
  list.replaceChildren();
  const main = chains.find((chain) => chain.type === 'main');
  if (!main) {
    text('#tree-note', 'No chains yet: create a Sub-Chain to start the ledger.');
    return;
  }
  const latest = await anchors();
  const subs = chains.filter((chain) => chain.type === 'sub');
  const children = element('ul');
  for (const [position, sub] of subs.entries()) {
    const anchor = latest.get(sub.name);
    const pending = anchor ? sub.block_count - anchor.treeSize : sub.block_count;
    const checks =
      position < VERIFIED_CHAINS
        ? (() => {
            const v = verdicts(sub.name, sub.block_count, anchor);
            return [verdictLine(v.checkpoint, 'checkpoint'), ...(v.anchor ? [verdictLine(v.anchor, 'anchor')] : [])];
          })()
        : [element('div', { className: 'verdict', textContent: `Not verified here: the tree verifies the first ${VERIFIED_CHAINS} Sub-Chains` })];
    children.append(
      element(
        'li',
        { className: 'node sub', dataset: { chain: sub.name } },
        element('strong', { textContent: sub.name }),
        ` · ${sub.block_count} blocks · head ${short(sub.latest_block_hash)}`,
        element('div', {
          className: anchor ? 'anchor' : 'anchor none',
          textContent: anchor
            ? `anchored in main #${anchor.mainIndex} · tree size ${anchor.treeSize} · root ${short(anchor.root)}${pending > 0 ? ` · ${pending} blocks since` : ''}`
            : 'not anchored yet',
        }),
        ...checks,
      ),
    );
  }
  list.append(
    element(
      'li',
      { className: 'node main', dataset: { chain: 'main' } },
      element('strong', { textContent: 'main' }),
      ` · ${main.block_count} blocks · ${subs.length} Sub-Chains · head ${short(main.latest_block_hash)}`,
      verdictLine(verdicts('main', main.block_count).checkpoint, 'checkpoint'),
      children,
    ),
  );
  recheckNow = false;
  text('#tree-note', `Updated ${new Date().toLocaleTimeString()}`);
}
