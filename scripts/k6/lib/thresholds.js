// A script's thresholds: those on failed requests and checks always, those on latency unless
// LATENCY_LIMITS=off (`-e LATENCY_LIMITS=off`): a run that checks what is answered, not how fast, as the
// test suite's smoke runs on a machine busy with other work (speed is the bench's to measure).
export function thresholds(always, latency) {
  return __ENV.LATENCY_LIMITS === 'off' ? always : Object.assign({}, always, latency);
}
