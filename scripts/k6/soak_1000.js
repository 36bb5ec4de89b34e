// A soak of 1000 VUs on the read mix: one record, the store size, ping, each followed by a think time.
//
//   k6 run -e DOMAIN=http://127.0.0.1:8080 scripts/k6/soak_1000.js
//
// SLEEP is the think time after each request in seconds, 1 by default (tests/scripts/test_k6.py sets 0 for a
// short smoke run).
//
// 1000 VUs keep 1000 connections open: raise the open-file limit of both k6 and the server
// first (ulimit -n 4096), or connections fail for lack of descriptors, not because of the service.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { JSON_HEADERS } from './lib/headers.js';
import { thresholds } from './lib/thresholds.js';

const DOMAIN = __ENV.DOMAIN || 'http://127.0.0.1:8080';
const RECORD_URL = `${DOMAIN}/api/v1/growth/brz/ngdp_r/2002`;
const THINK_SECONDS = Number(__ENV.SLEEP || 1);

export const options = {
  stages: [
    { duration: '10s', target: 1000 },
    { duration: '60s', target: 1000 },
    { duration: '10s', target: 0 },
  ],
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(95)', 'p(99)', 'count'],
  thresholds: thresholds({
    http_req_failed: ['rate<0.001'],
    checks: ['rate>0.999'],
  }, {
    http_req_duration: ['p(95)<200', 'p(99)<500'],
  }),
};

// The record must exist before the first GET, or a fresh server would answer nothing but 404s.
export function setup() {
  const res = http.put(RECORD_URL, JSON.stringify({ value: 183.26 }), {
    headers: JSON_HEADERS,
  });
  check(res, { 'setup PUT is 200 or 201': (r) => r.status === 200 || r.status === 201 });
}

export default function () {
  const read = http.get(RECORD_URL, { tags: { endpoint: 'get record' } });
  check(read, {
    'GET record is 200': (r) => r.status === 200,
    'GET record is BRZ/NGDP_R/2002': (r) =>
      r.status === 200 && r.json('Country') === 'BRZ' && r.json('Indicator') === 'NGDP_R' && r.json('Year') === 2002,
  });
  sleep(THINK_SECONDS);

  const size = http.get(`${DOMAIN}/api/v1/growth/size`, { tags: { endpoint: 'size' } });
  check(size, {
    'size is 200': (r) => r.status === 200,
    'size is a positive count': (r) => r.status === 200 && Number.isInteger(r.json('size')) && r.json('size') > 0,
  });
  sleep(THINK_SECONDS);

  const ping = http.get(`${DOMAIN}/ping`, { tags: { endpoint: 'ping' } });
  check(ping, {
    'ping is 200': (r) => r.status === 200,
    'ping says pong': (r) => r.body === 'pong',
  });
  sleep(THINK_SECONDS);
}
