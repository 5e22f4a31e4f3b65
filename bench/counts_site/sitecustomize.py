"""Loaded by a broker that bench/counts_per_message.py starts with this folder on PYTHONPATH:
counts the bytecodes each function of the event loop's thread runs between SIGUSR1 (start) and
SIGUSR2 (stop, then the counts go to the file named by COUNTS_SITE_OUT). Nothing happens
without that variable. Bench-only: tracing makes the broker many times slower."""
import collections
import os
import signal
import sys

if os.environ.get("COUNTS_SITE_OUT"):
    _bytecodes: collections.Counter = collections.Counter()
    _calls: collections.Counter = collections.Counter()

    def _trace(frame, event, arg):
        frame.f_trace_opcodes = True
        key = f"{frame.f_code.co_filename}:{frame.f_code.co_name}"
        _calls[key] += 1

        def each_opcode(frame, event, arg):
            if event == "opcode":
                _bytecodes[key] += 1
            return each_opcode
        return each_opcode

    def _start(*_) -> None:
        sys.settrace(_trace)  # signal handlers run on the main thread: the event loop's

    def _stop(*_) -> None:
        sys.settrace(None)
        path = os.environ["COUNTS_SITE_OUT"]
        with open(path + ".part", "w") as out:  # renamed once whole: the bench waits for the name
            for key, count in _bytecodes.most_common():
                out.write(f"{count} {_calls[key]} {key}\n")
        os.replace(path + ".part", path)

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
