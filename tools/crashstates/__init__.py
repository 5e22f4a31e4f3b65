"""crashstates: crash states at every sync point of a storage workload (the ALICE method, with strace
instead of FUSE). See README.md here; ``python -m tools.crashstates --help``."""
