"""`python -m minipulsar ...`: the same command line as the `minipulsar` script."""
import sys

from minipulsar.cli import main

sys.exit(main())
