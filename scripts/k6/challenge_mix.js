// The challenge's own read/update script (its k6/script.js), request for request: GET /ping,
// GET /api/v1/growth/brz/ngdp_r/2002, PUT {"value": 345.88}, each with a JSON Content-Type, 10 VUs for
// 1 minute. It has no checks, so that k6 spends its time sending; our read_update.js is the same mix checked.
//
//   k6 run -e DOMAIN=http://127.0.0.1:8080 scripts/k6/challenge_mix.js                # as published: 1 s sleeps
//   k6 run -e DOMAIN=http://127.0.0.1:8080 -e SLEEP=0 --vus 100 scripts/k6/challenge_mix.js   # throughput
//
// SLEEP (default 1, as published) is the pause after each of the two GETs; the entries' throughput
// figures are taken without it.
import http from 'k6/http';
import { sleep } from 'k6';
import { JSON_HEADERS } from './lib/headers.js';

const DOMAIN = __ENV.DOMAIN || 'http://127.0.0.1:8080';
const THINK_SECONDS = Number(__ENV.SLEEP || 1);
const RECORD_URL = `${DOMAIN}/api/v1/growth/brz/ngdp_r/2002`;
const PARAMS = { headers: JSON_HEADERS };

export const options = {
  vus: 10,
  duration: '1m',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(95)', 'p(99)', 'count'],
  // Ours: the published script has none. Failed requests would make its throughput meaningless.
  thresholds: {
    http_req_failed: ['rate<0.01'],
  },
};

// Ours too: the challenge runs it after its bulk POST; on an empty server the GETs would all be 404s.
export function setup() {
  http.put(RECORD_URL, JSON.stringify({ value: 183.26 }), PARAMS);
}

export default function () {
  http.get(`${DOMAIN}/ping`, PARAMS);
  sleep(THINK_SECONDS);
  http.get(RECORD_URL, PARAMS);
  sleep(THINK_SECONDS);
  http.put(RECORD_URL, JSON.stringify({ value: 345.88 }), PARAMS);
}
