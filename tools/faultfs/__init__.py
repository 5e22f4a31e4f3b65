"""faultfs: a fault-injecting FUSE file system for power-loss tests (a developer tool, not installed).

See README.md. The server runs as ``python tools/faultfs MOUNTPOINT --control SOCKET``;
``faultfs.control.FaultFS`` mounts one in a child process for a test.
"""
