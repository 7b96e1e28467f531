/** The benchmark's printed table: every figure with its resources, then the targets as ratios. */
import type { Usage } from './resources.ts';

interface Row {
  name: string;
  unit: string;
  rate: number;
  p50_ms: number;
  p99_ms: number;
  concurrency: number;
  conflicts: number;
  status: { '5xx': number };
  blocks_per_commit?: number;
  resources: Record<string, Usage>;
}

interface Report {
  machine: { cpu: string; cores: number; memory_gib: number; node: string; java: string };
  scenario_seconds: number;
  quick: boolean;
  figures: Row[];
  /** ledger-verify by pages, the pages kept by an earlier run (the target); `verify_first`: that first run (reports since the ninth). */
  verify?: { blocks: number; seconds: number; blocks_per_s: number; resources: Record<string, Usage> };
  verify_first?: { blocks: number; seconds: number; blocks_per_s: number; resources: Record<string, Usage> };
  verify_tiles?: { name: string; blocks: number; seconds: number; blocks_per_s: number; resources: Record<string, Usage> }[];
  targets: { name: string; figure: string; limit: string | null; value: number; ratio: number | null; target: string; met: boolean }[];
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const usage = (u: Usage | undefined) => (u ? [`${u.cpu_pct}%`, `${u.rss_max_mb} MiB`] : ['-', '-']);

export function printTable(report: Report): void {
  const m = report.machine;
  const out: string[] = [];
  out.push(
    `\n${m.cores} cores (${m.cpu}), ${m.memory_gib} GiB, Node ${m.node}, Java ${m.java}; ${report.scenario_seconds} s per scenario${report.quick ? ' (--quick: figures prove the harness, not the speed)' : ''}\n`,
  );
  out.push(
    table(
      ['figure', 'rate', 'unit', 'p50 ms', 'p99 ms', 'conc', 'blk/txn', 'conflicts', '5xx', 'svc CPU', 'svc RSS', 'ddb CPU', 'ddb RSS', 'bench CPU'],
      [
        ...report.figures.map((f) => [
          f.name,
          String(f.rate),
          f.unit,
          f.p50_ms.toFixed(1),
          f.p99_ms.toFixed(1),
          String(f.concurrency),
          f.blocks_per_commit === undefined ? '-' : String(f.blocks_per_commit),
          String(f.conflicts),
          String(f.status['5xx']),
          ...usage(f.resources.service),
          ...usage(f.resources.dynamodb),
          usage(f.resources.bench)[0]!,
        ]),
        ...verifierRuns(report).map((v) => [
          `${v.name}, ${v.blocks} blocks`,
          String(v.blocks_per_s),
          'blocks/s',
          '-',
          '-',
          '1',
          '-',
          '-',
          '-',
          ...usage(v.resources.service),
          ...usage(v.resources.dynamodb),
          `${usage(v.resources.verifier)[0]!} (verifier)`,
        ]),
      ],
    ),
  );
  out.push('');
  out.push(
    table(
      ['target', 'value', 'ratio to limit', 'wanted', 'met'],
      report.targets.map((t) => [t.name, String(t.value), t.ratio === null ? '-' : `${t.ratio}x`, t.target, t.met ? 'yes' : 'NO']),
    ),
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The ledger-verify runs of a report: by pages (first, then with its pages kept), then in tiles mode (each a target of the same name). */
function verifierRuns(report: Report): NonNullable<Report['verify_tiles']> {
  return [
    ...(report.verify_first ? [{ name: 'ledger-verify, first run', ...report.verify_first }] : []),
    ...(report.verify ? [{ name: 'ledger-verify', ...report.verify }] : []),
    ...(report.verify_tiles ?? []),
  ];
}

/** The same figures as a Markdown table (for the README): each service figure with its limit and ratio. */
export function markdownTable(report: Report): string {
  const byName = new Map(report.figures.map((f) => [f.name, f]));
  const rows = report.figures.map((f) => {
    const target = report.targets.find((t) => t.figure === f.name && t.ratio !== null);
    const limit = target?.limit ? byName.get(target.limit) : undefined;
    const cpu = (u: Usage | undefined) => (u ? `${u.cpu_pct}%` : '–');
    return [
      f.name,
      `${f.rate.toLocaleString('en-US')} ${f.unit}`,
      `${f.p50_ms} / ${f.p99_ms}`,
      f.blocks_per_commit === undefined ? '–' : String(f.blocks_per_commit),
      String(f.conflicts),
      String(f.status['5xx']),
      `${cpu(f.resources.service)} · ${f.resources.service?.rss_max_mb ?? '–'} MiB`,
      `${cpu(f.resources.dynamodb)} · ${f.resources.dynamodb?.rss_max_mb ?? '–'} MiB`,
      limit && target ? `${target.ratio}× ${limit.name}` : f.name.startsWith('raw ') ? '(a limit)' : '',
    ];
  });
  for (const v of verifierRuns(report)) {
    const t = report.targets.find((x) => x.name === v.name);
    rows.push([
      `${v.name}, ${v.blocks.toLocaleString('en-US')} blocks`,
      `${v.blocks_per_s.toLocaleString('en-US')} blocks/s (${v.seconds} s)`,
      '–',
      '–',
      '–',
      '–',
      `${v.resources.service?.cpu_pct}% · ${v.resources.service?.rss_max_mb} MiB`,
      `${v.resources.dynamodb?.cpu_pct}% · ${v.resources.dynamodb?.rss_max_mb} MiB`,
      t?.ratio ? `${t.ratio}× ${t.limit}` : '',
    ]);
  }
  const header = [
    'figure',
    'rate',
    'p50 / p99 ms',
    'blocks per txn',
    'lost races',
    '5xx',
    'service CPU · RSS',
    'DynamoDB Local CPU · RSS',
    'ratio to its limit',
  ];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
  const targets = [
    '| target | reached | wanted | met |',
    '|---|---|---|---|',
    ...report.targets
      .filter((t) => t.target !== '(reported)')
      .map((t) => {
        const relative = /\dx$/.test(t.target);
        const wanted = t.target
          .replace('>=', '≥')
          .replace('<=', '≤')
          .replace(/(\d)x$/, '$1×');
        return `| ${t.name} | ${relative ? `${t.ratio}×` : t.value.toLocaleString('en-US')} | ${wanted} | ${t.met ? 'yes' : '**no**'} |`;
      }),
  ];
  return `${lines.join('\n')}\n\n${targets.join('\n')}\n`;
}
