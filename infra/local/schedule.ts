/**
 * A schedule as EventBridge runs one: `run` every `everyMs`, never two runs at once (a run still going when the
 * next is due skips it), a failed run reported and the next one tried. The local stack's and the sim's
 * scheduler, outside every instance (an instance's own timer would freeze with it on Lambda). The timer does
 * not keep the process alive; `stopped()` says when to fire no more.
 */
export function everyOneAtATime(everyMs: number, run: () => Promise<unknown>, onError: (error: unknown) => void, stopped = () => false): void {
  let running = false;
  setInterval(() => {
    if (running || stopped()) return;
    running = true;
    run()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, everyMs).unref();
}
