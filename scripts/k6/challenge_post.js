// The challenge's own bulk POST script (its k6/script-post.js): 10 VUs for 1 minute, each POSTing the
// whole data file back to back, with no pause and no status polling. As published, the file is parsed
// once into a SharedArray and serialised again for every request (compact JSON, about two thirds of the
// indented file's bytes), and its thresholds are on every request's duration.
//
//   k6 run -e DOMAIN=http://127.0.0.1:8080 scripts/k6/challenge_post.js
//   k6 run -e DOMAIN=http://127.0.0.1:8080 -e FILE=../../data/growth-3mb.json scripts/k6/challenge_post.js
//
// FILE (default the 500 kB-class file, as in the challenge's k6/data/) is resolved relative to this script.
// A server that bounds its queue of accepted loads answers some of these POSTs 503; they count in
// http_req_failed, which the published script does not gate on, and scripts/bench reports their share.
import http from 'k6/http';
import { SharedArray } from 'k6/data';
import { DEFAULT_FILE, readBulkFile } from './lib/bulk_file.js';
import { JSON_HEADERS } from './lib/headers.js';
import { thresholds } from './lib/thresholds.js';

const DOMAIN = __ENV.DOMAIN || 'http://127.0.0.1:8080';
const FILE = __ENV.FILE || DEFAULT_FILE;
const records = new SharedArray('growth', () => JSON.parse(readBulkFile(() => open(FILE), FILE)));
const PARAMS = { headers: JSON_HEADERS };

export const options = {
  vus: 10,
  duration: '1m',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(95)', 'p(99)', 'count'],
  thresholds: thresholds({}, {
    http_req_duration: ['avg<100', 'p(95)<200'],
  }),
};

export default function () {
  http.post(`${DOMAIN}/api/v1/growth`, JSON.stringify(records), PARAMS);
}
