from gevent import monkey

monkey.patch_all()

import sys  # noqa: E402  (everything else is imported after patching)

from growth_gevent.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
