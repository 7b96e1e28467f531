/**
 * The explorer: a live monitor (WebSocket), the chain tree with anchors, a block browser, and the CID
 * decoder for admins. Everything goes through the public API with the user's key; nothing is privileged here.
 */
import './style.css';
import { ApiError, apiKey, type ChainInfo, loadConfig, path, request } from './api.ts';
import { loadPage, setChains, wireBlocks } from './blocks.ts';
import { $, clearError, showError, text } from './dom.ts';
import { startMonitor } from './monitor.ts';
import { renderTree, verifyAgain } from './tree.ts';

const VIEWS = ['tree', 'monitor', 'blocks', 'decoder'] as const;
type View = (typeof VIEWS)[number];
let isAdmin = false;

function currentView(): View {
  const wanted = location.hash.slice(1) as View;
  // It opens on the chains: what the ledger holds, not a live count that starts at zero.
  return VIEWS.includes(wanted) && (wanted !== 'decoder' || isAdmin) ? wanted : 'tree';
}

/** Told when the monitor is shown (it reads its past then); set once the monitor runs. */
let monitorShown: () => void = () => undefined;

async function refresh(view: View): Promise<void> {
  if (view === 'monitor') monitorShown();
  if (view === 'tree') await renderTree();
  if (view === 'blocks') {
    // The chain list alone: the tree's anchor lookup is not needed here.
    setChains((await request<ChainInfo[]>(path.chains())).map((chain) => chain.name));
    await loadPage();
  }
}

function showView(): void {
  const view = currentView();
  for (const section of document.querySelectorAll<HTMLElement>('[data-view]')) section.hidden = section.id !== view;
  for (const tab of document.querySelectorAll<HTMLElement>('#tabs a')) tab.classList.toggle('active', tab.dataset.tab === view);
  clearError();
  refresh(view).catch(showError);
}

/** Admin or not decides whether the decoder exists; the server checks again on every decode. */
async function checkRole(): Promise<void> {
  try {
    await request(path.identity());
    isAdmin = true;
    text('#role', 'admin');
  } catch (error) {
    isAdmin = false;
    text('#role', error instanceof ApiError && error.status === 401 ? 'no valid key' : 'not admin');
  }
  $('#decoder-tab').hidden = !isAdmin;
  $('#decoder-form').hidden = !isAdmin;
  $('#decoder-locked').hidden = isAdmin;
  if (!isAdmin) $('#decoded').hidden = true;
}

async function main(): Promise<void> {
  // Forms never submit natively (the page's CSP forbids it), and a key given before the page is ready is
  // kept and used once it is: on a cold start the first answers may take a moment.
  for (const form of document.querySelectorAll('form')) form.addEventListener('submit', (e) => e.preventDefault());
  let started: (monitor: ReturnType<typeof startMonitor>) => void;
  const ready = new Promise<ReturnType<typeof startMonitor>>((resolve) => (started = resolve));
  $('#key-form').addEventListener('submit', () => {
    apiKey.set($<HTMLInputElement>('#api-key').value.trim());
    void ready.then((monitor) => {
      monitor.reconnect();
      checkRole().then(showView, showError);
    });
  });

  await loadConfig().catch(() => undefined);
  const field = $<HTMLInputElement>('#api-key');
  if (!field.value) field.value = apiKey.get();
  await checkRole();
  const monitor = startMonitor();
  monitorShown = () => monitor.shown();
  wireBlocks();
  started!(monitor);

  let pending: ReturnType<typeof setTimeout> | undefined;
  monitor.onBlock(() => {
    // New blocks redraw the open tree or block list, at most twice a second.
    clearTimeout(pending);
    pending = setTimeout(() => {
      const view = currentView();
      if (view === 'tree' || view === 'blocks') refresh(view).catch(showError);
    }, 500);
  });

  $('#tree-refresh').addEventListener('click', () => {
    verifyAgain();
    renderTree().catch(showError);
  });

  $('#decoder-form').addEventListener('submit', () => {
    const output = $('#decoded');
    const body = { cid: $<HTMLInputElement>('#cid').value.trim(), nonce: $<HTMLInputElement>('#nonce').value.trim() };
    request<unknown>(path.decode(), { method: 'POST', body }).then(
      (data) => {
        output.textContent = JSON.stringify(data, null, 2);
        output.classList.remove('error');
      },
      (error: unknown) => {
        output.textContent = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error);
        output.classList.add('error');
      },
    );
    output.hidden = false;
  });

  window.addEventListener('hashchange', showView);
  showView();
}

main().catch(showError);
