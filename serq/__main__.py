import sys

from serq.cli import main

sys.exit(main())
