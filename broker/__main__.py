import sys

from broker.cli import main

sys.exit(main())
