// A job run every `everyMs`, never two ticks at once: a tick still running when the next is due
// is not joined by another. Stopping waits for the tick in progress; `stopped()` lets a long
// tick end early.

/** Starts the job; the returned function stops it and resolves once no tick runs. */
export function periodically(everyMs: number, tick: (stopped: () => boolean) => Promise<unknown>): () => Promise<void> {
  let stopped = false;
  let ticking: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (stopped || ticking) return;
    ticking = tick(() => stopped).finally(() => {
      ticking = null;
    });
  }, everyMs);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await ticking;
  };
}
