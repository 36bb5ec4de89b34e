// The challenge's read/update mix: ping, read BRZ/NGDP_R/2002, replace its value.
//
//   k6 run -e DOMAIN=http://127.0.0.1:8080 scripts/k6/read_update.js
//
// SLEEP is the think time between requests in seconds: 1 by default, the challenge's pacing;
// SLEEP=0 turns the run into a throughput test with the same thresholds.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { JSON_HEADERS } from './lib/headers.js';
import { thresholds } from './lib/thresholds.js';

const DOMAIN = __ENV.DOMAIN || 'http://127.0.0.1:8080';
const THINK_SECONDS = Number(__ENV.SLEEP || 1);
// Lower case, as the challenge's script sends it: country and indicator are case-insensitive.
const RECORD_URL = `${DOMAIN}/api/v1/growth/brz/ngdp_r/2002`;

export const options = {
  vus: 50,
  duration: '30s',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(95)', 'p(99)', 'count'],
  thresholds: thresholds({
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
  }, {
    http_req_duration: ['p(95)<100', 'p(99)<250'],
  }),
};

function isTheRecord(res) {
  const record = res.json();
  return record.Country === 'BRZ' && record.Indicator === 'NGDP_R' && record.Year === 2002;
}

// The record must exist before the first GET, or a fresh server would answer 404s until a PUT lands.
export function setup() {
  const res = http.put(RECORD_URL, JSON.stringify({ value: 183.26 }), { headers: JSON_HEADERS });
  check(res, { 'setup PUT is 200 or 201': (r) => r.status === 200 || r.status === 201 });
}

export default function () {
  const ping = http.get(`${DOMAIN}/ping`, { tags: { endpoint: 'ping' } });
  check(ping, {
    'ping is 200': (r) => r.status === 200,
    'ping says pong': (r) => r.body === 'pong',
  });
  sleep(THINK_SECONDS);

  const read = http.get(RECORD_URL, { tags: { endpoint: 'get record' } });
  check(read, {
    'GET record is 200': (r) => r.status === 200,
    'GET record is BRZ/NGDP_R/2002': (r) => r.status === 200 && isTheRecord(r),
    'GET record has a numeric Value': (r) => r.status === 200 && typeof r.json('Value') === 'number',
  });
  sleep(THINK_SECONDS);

  // A different value on every iteration, so that the answer shows this very write was applied.
  const value = Math.round(Math.random() * 100000) / 100;
  const update = http.put(RECORD_URL, JSON.stringify({ value }), {
    headers: JSON_HEADERS,
    tags: { endpoint: 'put record' },
  });
  check(update, {
    'PUT record is 200': (r) => r.status === 200,
    'PUT record returns the new value': (r) => r.status === 200 && isTheRecord(r) && r.json('Value') === value,
  });
}
