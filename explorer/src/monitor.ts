/**
 * The monitor: the recent past read from the API when it opens (the last minutes of the chains' newest blocks), then
 * block_added and event messages from the WebSocket, counted and charted per second. A block read and then pushed is
 * counted once.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { type BlockPage, type ChainInfo, path, request, webSocketUrl } from './api.ts';
import { openBlock } from './blocks.ts';
import { $, element, text } from './dom.ts';

const WINDOW = 300; // seconds on the chart, and of the past read on opening
/** Chains whose newest blocks are read on opening (a request each), the busiest first. */
const HISTORY_CHAINS = 25;

export interface Monitor {
  reconnect(): void;
  onBlock(listener: (chain: string) => void): void;
  /** The monitor is on screen: its past is read (once, and again after a new key), not before anyone looks. */
  shown(): void;
}

export function startMonitor(): Monitor {
  const totals = { blocks: 0, events: 0 };
  const perSecond = new Map<number, { blocks: number; events: number }>();
  const listeners: ((chain: string) => void)[] = [];
  const bucket = (second: number) => perSecond.get(second) ?? perSecond.set(second, { blocks: 0, events: 0 }).get(second)!;

  const chartBox = $('#chart');
  const chart = new uPlot(
    {
      width: Math.max(280, chartBox.clientWidth || 600),
      height: 220,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: 'per second' }],
      series: [{}, { label: 'blocks/s', stroke: '#2563eb', width: 2 }, { label: 'events/s', stroke: '#16a34a', width: 2, dash: [6, 4] }],
    },
    [[], [], []],
    chartBox,
  );
  new ResizeObserver(() => chart.setSize({ width: Math.max(280, chartBox.clientWidth), height: 220 })).observe(chartBox);

  const feed = $('#feed');
  /** A line of the feed; an event's line opens its block in Blocks, where it is verified. */
  function addToFeed(line: string, eventId?: string): void {
    const item = document.createElement('li');
    const at = eventId ? /^(.+)_(\d+)_\d+$/.exec(eventId) : null;
    if (at) {
      const link = element('a', { href: '#blocks', textContent: line, title: 'open its block (verified there)' });
      link.addEventListener('click', () => void openBlock(at[1]!, Number(at[2])));
      item.append(link);
    } else item.textContent = line;
    feed.prepend(item);
    while (feed.children.length > 20) feed.lastElementChild!.remove();
  }

  /** Blocks and events already counted (`chain#index`, event ids): a push of one read on opening is not counted again. */
  const seen = { blocks: new Set<string>(), events: new Set<string>() };
  const shownAt = { blocks: '#block-count', events: '#event-count' } as const;
  /** Counts a block or an event at `second`, once for its key (none: counted); false when it was counted before. */
  const count = (kind: 'blocks' | 'events', key: string | undefined, second: number): boolean => {
    if (key !== undefined) {
      if (seen[kind].has(key)) return false;
      seen[kind].add(key);
    }
    totals[kind]++;
    bucket(second)[kind]++;
    text(shownAt[kind], String(totals[kind]));
    return true;
  };
  const blockKey = (chain: string, index: number | undefined) => (index === undefined ? undefined : `${chain}#${index}`);

  /** The last WINDOW seconds, from the newest page of the busiest chains: counted, charted, the newest events listed. */
  async function loadRecent(): Promise<void> {
    text('#history-note', 'reading the last minutes…');
    try {
      const chains = (await request<ChainInfo[]>(path.chains())).filter((c) => c.block_count > 1).sort((a, b) => b.block_count - a.block_count);
      const read = chains.slice(0, HISTORY_CHAINS);
      const since = Date.now() / 1000 - WINDOW;
      const pages = await Promise.all(read.map((c) => request<BlockPage>(path.blocks(c.name, 100, 0)).catch(() => undefined)));
      const recent = pages.flatMap((page) => page?.blocks ?? []).filter((b) => b.timestamp >= since);
      recent.sort((a, b) => a.timestamp - b.timestamp);
      for (const block of recent) {
        const second = Math.floor(block.timestamp);
        if (!count('blocks', blockKey(block.chain_name, block.index), second)) continue;
        for (const event of block.events) {
          if (count('events', event.event_id, second)) addToFeed(`${block.chain_name} · ${event.event_type} · ${event.entity_id}`, event.event_id);
        }
      }
      const of = chains.length > read.length ? `the ${read.length} busiest of ${chains.length} chains` : `${read.length} chain${read.length === 1 ? '' : 's'}`;
      text('#history-note', `${recent.length} block${recent.length === 1 ? '' : 's'} of the last ${WINDOW / 60} minutes (${of}), then live`);
    } catch (error) {
      text('#history-note', `the last minutes could not be read: ${(error as Error).message}`);
    }
  }

  setInterval(() => {
    const now = Math.floor(Date.now() / 1000);
    const xs: number[] = [];
    const bs: number[] = [];
    const es: number[] = [];
    for (let second = now - WINDOW; second < now; second++) {
      const counts = perSecond.get(second);
      xs.push(second);
      bs.push(counts?.blocks ?? 0);
      es.push(counts?.events ?? 0);
    }
    for (const second of perSecond.keys()) if (second < now - WINDOW) perSecond.delete(second);
    chart.setData([xs, bs, es]);
    text('#block-rate', (bs.slice(-10).reduce((a, b) => a + b, 0) / 10).toFixed(1));
  }, 1000);

  let socket: WebSocket | undefined;
  let retry = 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function connect(): void {
    clearTimeout(timer);
    socket?.close();
    text('#ws-status', 'connecting…');
    const ws = new WebSocket(webSocketUrl());
    socket = ws;
    ws.onopen = () => {
      retry = 1000;
      ws.send(JSON.stringify({ type: 'subscribe', chain: '*' }));
    };
    ws.onmessage = (message) => {
      const data = JSON.parse(String(message.data)) as {
        type: string;
        chain?: string;
        block?: { index: number };
        event?: { event_id?: string; event_type: string; entity_id: string };
        detail?: string;
      };
      const second = Math.floor(Date.now() / 1000);
      if (data.type === 'subscribed') text('#ws-status', 'live');
      else if (data.type === 'block_added') {
        count('blocks', blockKey(data.chain ?? '', data.block?.index), second);
        for (const listener of listeners) listener(data.chain ?? '');
      } else if (data.type === 'event' && data.event) {
        if (count('events', data.event.event_id, second)) addToFeed(`${data.chain} · ${data.event.event_type} · ${data.event.entity_id}`, data.event.event_id);
      } else if (data.type === 'error') addToFeed(`error: ${data.detail}`);
    };
    ws.onclose = () => {
      if (socket !== ws) return;
      text('#ws-status', `disconnected, retrying in ${Math.round(retry / 1000)} s`);
      timer = setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30_000);
    };
  }
  connect();
  // The past costs a request a chain (up to HISTORY_CHAINS): read when the monitor is first shown, not on every open.
  let pastRead = false;
  let wasShown = false;
  const readPast = () => {
    if (pastRead) return;
    pastRead = true;
    void loadRecent();
  };
  return {
    // A new key may read more: the past is read again if it was shown (what was counted stays counted once).
    reconnect: () => {
      connect();
      pastRead = false;
      if (wasShown) readPast();
    },
    onBlock: (listener) => listeners.push(listener),
    shown: () => {
      wasShown = true;
      readPast();
    },
  };
}
