/** The Main Chain / Sub-Chain tree: each Sub-Chain under the Main Chain, with its latest anchor. */
import { type BlockPage, type ChainInfo, path, request } from './api.ts';
import { $, element, short, text } from './dom.ts';

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
  for (const sub of subs) {
    const anchor = latest.get(sub.name);
    const pending = anchor ? sub.block_count - anchor.treeSize : sub.block_count;
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
      ),
    );
  }
  list.append(
    element(
      'li',
      { className: 'node main', dataset: { chain: 'main' } },
      element('strong', { textContent: 'main' }),
      ` · ${main.block_count} blocks · ${subs.length} Sub-Chains · head ${short(main.latest_block_hash)}`,
      children,
    ),
  );
  text('#tree-note', `Updated ${new Date().toLocaleTimeString()}`);
}
