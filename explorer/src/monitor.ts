/** The live monitor: block_added and event messages from the WebSocket, counted and charted per second. */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { webSocketUrl } from './api.ts';
import { $, text } from './dom.ts';

const WINDOW = 60; // seconds on the chart

export interface Monitor {
  reconnect(): void;
  onBlock(listener: (chain: string) => void): void;
}

export function startMonitor(): Monitor {
  let blocks = 0;
  let events = 0;
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
  function addToFeed(line: string): void {
    const item = document.createElement('li');
    item.textContent = line;
    feed.prepend(item);
    while (feed.children.length > 20) feed.lastElementChild!.remove();
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
        event?: { event_type: string; entity_id: string };
        detail?: string;
      };
      const second = Math.floor(Date.now() / 1000);
      if (data.type === 'subscribed') text('#ws-status', 'live');
      else if (data.type === 'block_added') {
        blocks++;
        bucket(second).blocks++;
        text('#block-count', String(blocks));
        for (const listener of listeners) listener(data.chain ?? '');
      } else if (data.type === 'event' && data.event) {
        events++;
        bucket(second).events++;
        text('#event-count', String(events));
        addToFeed(`${data.chain} · ${data.event.event_type} · ${data.event.entity_id}`);
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
  return { reconnect: connect, onBlock: (listener) => listeners.push(listener) };
}
