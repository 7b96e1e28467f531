/**
 * `<data dir>/stack.json` names the running `npm start` to the local commands (`npm run keys`, `npm run migrate`):
 * believed only while the process that wrote it runs, not another that the system gave its pid afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { processStart, readStackFile, type StackFile, writeStackFile } from '#infra/local/stack-file';

const dir = mkdtempSync(join(tmpdir(), 'stack-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const stack = (pid: number): StackFile => ({ pid, url: 'http://127.0.0.1:2661', dynamodb_endpoint: 'http://127.0.0.1:8000' });

describe('stack.json', () => {
  it('names the running stack, with when its process started', () => {
    writeStackFile(dir, stack(process.pid));
    assert.equal(readStackFile(dir)?.url, 'http://127.0.0.1:2661');
    if (process.platform === 'linux') {
      assert.match(String(processStart(process.pid)), /^\d+$/);
      assert.equal(JSON.parse(readFileSync(join(dir, 'stack.json'), 'utf8')).process_start, processStart(process.pid));
    }
  });

  it('is not believed when its pid is another process now (a stack killed without its stop, its pid given again)', {
    skip: process.platform !== 'linux' && 'needs /proc',
  }, () => {
    writeStackFile(dir, { ...stack(process.pid), process_start: '1' });
    assert.equal(readStackFile(dir), undefined);
  });

  it('is not believed when its process is gone, and is believed without a start time (a file written before it had one)', () => {
    writeFileSync(join(dir, 'stack.json'), JSON.stringify({ ...stack(2 ** 22 + 12345) }));
    assert.equal(readStackFile(dir), undefined);
    writeFileSync(join(dir, 'stack.json'), JSON.stringify(stack(process.pid)));
    assert.equal(readStackFile(dir)?.pid, process.pid);
  });
});
