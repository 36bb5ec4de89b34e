// The headers of a JSON request. With GROWTH_API_TOKEN set (`-e GROWTH_API_TOKEN=...` or the
// environment), they carry the bearer token that a server with GROWTH_API_TOKENS requires for writes.
const TOKEN = __ENV.GROWTH_API_TOKEN;

export const JSON_HEADERS = TOKEN
  ? { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` }
  : { 'Content-Type': 'application/json' };
