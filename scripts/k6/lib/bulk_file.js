// The data file that a bulk script POSTs (FILE, resolved by k6 relative to the script), read in the init
// context: `read` is the script's own `() => open(FILE)`, so that k6 resolves the path from the script. A
// missing file ends the run (exit 108) with a message that says how to make it, not k6's GoError with a Go
// stack.
import exec from 'k6/execution';

export const DEFAULT_FILE = '../../data/growth-500kb.json';

export function readBulkFile(read, file) {
  try {
    return read();
  } catch (error) {
    return exec.test.abort(`cannot read FILE=${file} (k6 resolves it relative to scripts/k6/): ${error.message || error}. `
      + 'Make the default one with `python scripts/generate_data.py --records 4537 --indent 4 '
      + 'data/growth-500kb.json`, or give another with -e FILE=...');
  }
}
